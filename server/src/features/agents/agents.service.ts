import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { DB } from '../../db/schema.ts';
import { approversCheck } from '../users/approvers-check.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { BUS_TOPICS, type ProcessBus } from '../../lib/process-bus.ts';
import type { BudgetsService } from '../usage/budgets.service.ts';
import { inputJsonSchema, type ToolRegistry } from './tool-registry.ts';
import { nextVersion, requireKnownTools, writeVersion } from './agent-behaviour.ts';
import { actionRulesRepo, agentsRepo } from './agents.repo.ts';
import type { actionRuleInput, actionRulePatch, agentInput, agentPatch } from './agents.schemas.ts';

export function createAgentsService(deps: {
  db: Kysely<DB>;
  bus: ProcessBus;
  tools: Pick<ToolRegistry, 'forOrg'>;
  /** Agents' budgets are the budgets service's: it writes them with the agent, and makes a change apply. */
  budgets: Pick<BudgetsService, 'writeAgent' | 'agentDeleted'>;
}) {
  async function requireAgent(orgId: string, agentId: string | null | undefined): Promise<void> {
    if (agentId && !(await agentsRepo.find(deps.db, orgId, agentId))) {
      throw new AppError('validation_failed', 'body/agentId: no agent with this id in the organization');
    }
  }

  return {
    /** The tools the org's agents can be given: the built-in ones and its MCP servers', with what each does. */
    async listTools(orgId: string) {
      return [...(await deps.tools.forOrg(orgId)).values()].map((definition) => ({
        name: definition.name,
        description: definition.description,
        inputSchema: inputJsonSchema(definition),
        server: definition.server ?? null,
      }));
    },

    async createAgent(orgId: string, input: z.output<typeof agentInput>, userId: string) {
      await requireKnownTools(deps.tools, orgId, input.tools);
      const { budget, name, changeNote, ...behaviour } = input;
      const agentId = randomUUID();
      return (await deps.budgets.writeAgent(orgId, budget ?? undefined, async (trx) => {
        await agentsRepo.insert(trx, { id: agentId, orgId, name });
        await writeVersion(trx, { orgId, agentId, liveVersion: null }, behaviour, { changeNote, userId, live: true });
        return agentsRepo.find(trx, orgId, agentId);
      }))!;
    },
    listAgents: (orgId: string) => agentsRepo.list(deps.db, orgId),
    async getAgent(orgId: string, id: string) {
      const agent = await agentsRepo.find(deps.db, orgId, id);
      if (!agent) throw notFound('Agent');
      return agent;
    },
    /** A change of what the agent does makes its next version, live at once (a change of name or budget makes none). */
    async updateAgent(orgId: string, id: string, changes: z.output<typeof agentPatch>, userId: string) {
      await requireKnownTools(deps.tools, orgId, changes.tools);
      const { budget, name, changeNote, ...fields } = changes;
      const agent = await deps.budgets.writeAgent(orgId, budget, async (trx) => {
        const made = { changeNote: changeNote ?? null, userId, live: true };
        if ((await nextVersion(trx, { orgId, agentId: id }, fields, made)) === undefined) return undefined;
        if (name !== undefined) await agentsRepo.update(trx, orgId, id, { name });
        return agentsRepo.find(trx, orgId, id);
      });
      if (!agent) throw notFound('Agent');
      return agent;
    },
    async deleteAgent(orgId: string, id: string) {
      if (!(await agentsRepo.delete(deps.db, orgId, id))) throw notFound('Agent');
      await deps.budgets.agentDeleted(orgId, id);
    },

    async createRule(orgId: string, input: z.output<typeof actionRuleInput>) {
      await requireAgent(orgId, input.agentId);
      await approversCheck.members(deps.db, orgId, input.approvers);
      await approversCheck.enough(deps.db, orgId, input.approvers, input.minApprovals);
      return actionRulesRepo.insert(deps.db, { id: randomUUID(), orgId, ...input });
    },
    listRules: (orgId: string) => actionRulesRepo.list(deps.db, orgId),
    async getRule(orgId: string, id: string) {
      const rule = await actionRulesRepo.find(deps.db, orgId, id);
      if (!rule) throw notFound('Action rule');
      return rule;
    },
    async updateRule(orgId: string, id: string, changes: z.output<typeof actionRulePatch>) {
      await requireAgent(orgId, changes.agentId);
      await approversCheck.change(deps.db, orgId, changes, async () => {
        const current = await actionRulesRepo.find(deps.db, orgId, id);
        if (!current) throw notFound('Action rule');
        return current;
      });
      const rule = await actionRulesRepo.update(deps.db, orgId, id, changes);
      if (!rule) throw notFound('Action rule');
      await deps.bus.publish(BUS_TOPICS.actionRule, id);
      return rule;
    },
    async deleteRule(orgId: string, id: string) {
      if (!(await actionRulesRepo.delete(deps.db, orgId, id))) throw notFound('Action rule');
      await deps.bus.publish(BUS_TOPICS.actionRule, id);
    },
  };
}

export type AgentsService = ReturnType<typeof createAgentsService>;
