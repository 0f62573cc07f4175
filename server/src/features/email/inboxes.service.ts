import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { EmailInboxAgentRow, EmailInboxRow } from '../../db/email-schema.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { DB } from '../../db/schema.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import type { ProcessBus } from '../../lib/process-bus.ts';
import { agentsRepo } from '../agents/agents.repo.ts';
import { approversCheck } from '../users/approvers-check.ts';
import type { EmailIntegrationService } from './email-integration.service.ts';
import { inboxRoutesChanged } from './inbox-routes.ts';
import type { AssignmentInput, AssignmentPatch, InboxInput, PublicInbox } from './inboxes.schemas.ts';
import { inboxesRepo } from './inboxes.repo.ts';

const toAssignment = (row: EmailInboxAgentRow) => ({
  agentId: row.agentId,
  isPrimary: row.isPrimary,
  autoRespond: row.autoRespond,
  approvalRules: row.approvalRules,
  argumentRules: row.argumentRules,
  approvers: row.approvers,
  minApprovals: row.minApprovals,
  notify: row.notify,
  assignedByUserId: row.assignedByUserId,
  createdAt: row.createdAt,
});

const jsonOrNull = (value: object | null) => (value === null ? null : JSON.stringify(value));

/** Two admins made an agent primary at once, or assigned the same agent twice. */
const assignConflict = (error: unknown) =>
  isUniqueViolation(error, 'email_inbox_agents_one_primary')
    ? new AppError('conflict', 'Another primary agent was assigned at the same moment; try again')
    : new AppError('conflict', 'This agent is assigned to the inbox already');

/** An org's inboxes (addresses on verified domains, unique across orgs) and the agents that answer them. */
export function createInboxesService(deps: {
  db: Kysely<DB>;
  bus: Pick<ProcessBus, 'publish'>;
  integration: Pick<EmailIntegrationService, 'requireVerifiedDomain'>;
}) {
  const { db } = deps;

  async function withAgents(rows: EmailInboxRow[]): Promise<PublicInbox[]> {
    const agents = await inboxesRepo.agentsOf(
      db,
      rows.map((row) => row.id),
    );
    return rows.map((row) => ({
      id: row.id,
      emailAddress: row.emailAddress,
      displayName: row.displayName,
      agents: agents.filter((agent) => agent.inboxId === row.id).map(toAssignment),
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    }));
  }

  async function requireInbox(orgId: string, inboxId: string): Promise<EmailInboxRow> {
    const inbox = await inboxesRepo.find(db, orgId, inboxId);
    if (!inbox) throw notFound('Inbox');
    return inbox;
  }

  return {
    async create(orgId: string, input: InboxInput): Promise<PublicInbox> {
      await deps.integration.requireVerifiedDomain(orgId, input.emailAddress);
      try {
        const row = await inboxesRepo.insert(db, { id: randomUUID(), orgId, ...input });
        await inboxRoutesChanged.inbox(deps.bus, row.emailAddress);
        return (await withAgents([row]))[0]!;
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('conflict', `An inbox for ${input.emailAddress} already exists`);
        throw error;
      }
    },

    list: async (orgId: string) => withAgents(await inboxesRepo.list(db, orgId)),

    get: async (orgId: string, inboxId: string) => (await withAgents([await requireInbox(orgId, inboxId)]))[0]!,

    async rename(orgId: string, inboxId: string, displayName: string): Promise<PublicInbox> {
      const row = await inboxesRepo.rename(db, orgId, inboxId, displayName);
      if (!row) throw notFound('Inbox');
      return (await withAgents([row]))[0]!;
    },

    async remove(orgId: string, inboxId: string): Promise<void> {
      const removed = await inboxesRepo.remove(db, orgId, inboxId);
      if (!removed) throw notFound('Inbox');
      await inboxRoutesChanged.inbox(deps.bus, removed.emailAddress);
    },

    /** Assigns an org's agent; as primary, it takes the place of the previous primary. */
    async assign(orgId: string, inboxId: string, userId: string, input: AssignmentInput) {
      await requireInbox(orgId, inboxId);
      if (!(await agentsRepo.find(db, orgId, input.agentId))) throw notFound('Agent');
      await approversCheck.members(db, orgId, input.approvers);
      await approversCheck.enough(db, orgId, input.approvers, input.minApprovals);
      try {
        const row = await db.transaction().execute(async (trx) => {
          if (input.isPrimary) await inboxesRepo.demotePrimary(trx, inboxId);
          return inboxesRepo.insertAgent(trx, {
            inboxId,
            orgId,
            agentId: input.agentId,
            isPrimary: input.isPrimary,
            autoRespond: input.autoRespond,
            approvalRules: jsonOrNull(input.approvalRules),
            argumentRules: JSON.stringify(input.argumentRules),
            approvers: jsonOrNull(input.approvers),
            minApprovals: input.minApprovals,
            notify: JSON.stringify(input.notify),
            assignedByUserId: userId,
          });
        });
        return toAssignment(row);
      } catch (error) {
        if (isUniqueViolation(error)) throw assignConflict(error);
        throw error;
      }
    },

    /** Changes an assignment's settings; who it runs as stays the user who assigned it. */
    async updateAssignment(orgId: string, inboxId: string, agentId: string, changes: AssignmentPatch) {
      const current = await inboxesRepo.findAgent(db, orgId, inboxId, agentId);
      if (!current) throw notFound('Assignment');
      await approversCheck.change(db, orgId, changes, async () => current);
      try {
        const row = await db.transaction().execute(async (trx) => {
          if (changes.isPrimary) await inboxesRepo.demotePrimary(trx, inboxId);
          return inboxesRepo.updateAgent(trx, orgId, inboxId, agentId, {
            isPrimary: changes.isPrimary,
            autoRespond: changes.autoRespond,
            approvalRules: changes.approvalRules === undefined ? undefined : jsonOrNull(changes.approvalRules),
            argumentRules: changes.argumentRules === undefined ? undefined : JSON.stringify(changes.argumentRules),
            approvers: changes.approvers === undefined ? undefined : jsonOrNull(changes.approvers),
            minApprovals: changes.minApprovals,
            notify: changes.notify === undefined ? undefined : JSON.stringify(changes.notify),
          });
        });
        // Taken off the inbox meanwhile.
        if (!row) throw notFound('Assignment');
        return toAssignment(row);
      } catch (error) {
        if (isUniqueViolation(error)) throw assignConflict(error);
        throw error;
      }
    },

    agents: async (orgId: string, inboxId: string) => (await withAgents([await requireInbox(orgId, inboxId)]))[0]!.agents,

    async unassign(orgId: string, inboxId: string, agentId: string): Promise<void> {
      if (!(await inboxesRepo.removeAgent(db, orgId, inboxId, agentId))) throw notFound('Assignment');
    },
  };
}

export type InboxesService = ReturnType<typeof createInboxesService>;
