import { createHmac } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB, ToolCallRow } from '../../../db/schema.ts';
import { usersRepo } from '../../users/users.repo.ts';
import type { Clock } from '../../../lib/clock.ts';
import { timingSafeEqualString } from '../../../lib/crypto.ts';
import { AppError, notFound } from '../../../lib/errors.ts';
import { unstorableText } from '../../../lib/json-input.ts';
import { inputJsonSchema, type ToolRegistry } from '../../agents/tool-registry.ts';
import { type ApprovalsService, type Decider, MAX_DECISION_REASON_CHARS } from '../approvals.service.ts';
import { decisionLine, SLACK_ACTIONS, type SlackAction } from './slack-blocks.ts';
import { type Block, SlackApiError } from './slack-client.ts';
import type { OrgSlack } from './slack-integration.service.ts';
import { slackIntegrationRepo } from './slack-integration.repo.ts';
import { editedArguments, editModal, flatSchemaOf, type ModalMetadata, wordsModal } from './slack-modals.ts';
import { memberByEmail } from './slack.repo.ts';

/** Slack's own limit: a request whose timestamp is further than this from now is refused (a replay). */
const TOLERANCE_MS = 5 * 60 * 1000;
/** The refusals a person is told of; anything else is ours to log. */
const REFUSALS = new Set(['already_decided', 'not_an_approver', 'not_found', 'validation_failed', 'arguments_denied']);

interface BlockActions {
  type: 'block_actions';
  user: { id: string };
  trigger_id: string;
  channel?: { id: string };
  actions: Array<{ action_id: string; value?: string }>;
}
interface ViewSubmission {
  type: 'view_submission';
  user: { id: string };
  view: {
    callback_id: string;
    private_metadata: string;
    state: { values: Record<string, Record<string, { value?: string | null }>> };
  };
}
type Payload = BlockActions | ViewSubmission;

/** What the route answers Slack at once, and the work it does after answering (Slack waits 3 seconds at most). */
export interface InteractionOutcome {
  answer: Record<string, unknown> | null;
  after?: () => Promise<void>;
}

const invalid = (message: string) => new AppError('invalid_payload', message);

function parsePayload(rawBody: string): Payload {
  const field = new URLSearchParams(rawBody).get('payload');
  if (!field) throw invalid('An interaction is form-encoded with one field, payload');
  let payload: unknown;
  try {
    payload = JSON.parse(field);
  } catch {
    throw invalid('payload is not JSON');
  }
  const given = payload as {
    type?: unknown;
    user?: { id?: unknown };
    actions?: unknown;
    trigger_id?: unknown;
    view?: { private_metadata?: unknown };
  } | null;
  if (typeof given?.user?.id !== 'string') throw invalid('payload.user.id is missing');
  // The route reads the body raw (for its signature), so the one rule for input text is applied here.
  const unstorable = unstorableText(payload, 'payload');
  if (unstorable) throw invalid(unstorable);
  if (given.type === 'block_actions' && Array.isArray(given.actions) && typeof given.trigger_id === 'string')
    return given as unknown as BlockActions;
  if (given.type === 'view_submission' && typeof given.view?.private_metadata === 'string')
    return given as unknown as ViewSubmission;
  throw invalid('Only block_actions and view_submission interactions are taken');
}

/** The button clicked: one of ours, naming a call; anything else is a 400 before anything is done. */
function buttonOf(payload: BlockActions): { kind: SlackAction; a: string; t: string } {
  const [action] = payload.actions;
  if (!action || !(SLACK_ACTIONS as readonly string[]).includes(action.action_id))
    throw invalid(`Unknown action: ${String(action?.action_id).slice(0, 50)}`);
  return { kind: action.action_id as SlackAction, ...callOf(action.value) };
}

function callOf(value: string | undefined): { a: string; t: string } {
  try {
    const ref = JSON.parse(value ?? '') as { a?: unknown; t?: unknown };
    if (typeof ref.a === 'string' && /^[0-9a-f-]{36}$/i.test(ref.a) && typeof ref.t === 'string' && ref.t.length <= 200)
      return { a: ref.a, t: ref.t };
  } catch {
    // said below
  }
  throw invalid('The button does not name a tool call');
}

/**
 * Interactions of an org's Slack app (its Interactivity Request URL): verified with its signing
 * secret, each taken once. A person is the Slack user's member (by the email Slack reports for them);
 * who may decide is the approvals service's rule, as on every channel. Approve decides at once;
 * Edit, Send back and Reject open a modal, whose submission decides.
 */
export function createSlackInteractions(deps: {
  db: Kysely<DB>;
  clock: Clock;
  slackOf: (orgId: string) => Promise<OrgSlack | undefined>;
  approvals: Pick<ApprovalsService, 'decideWith' | 'beforeDeciding' | 'recordRefusals'>;
  tools: Pick<ToolRegistry, 'forOrg'>;
  logger: Pick<Logger, 'warn'>;
}) {
  /** The request is Slack's, for this org's app, fresh, and not seen before; or a 401 that decides nothing. */
  async function verify(orgId: string, slack: OrgSlack, headers: Record<string, unknown>, rawBody: string) {
    const timestamp = String(headers['x-slack-request-timestamp'] ?? '');
    const signature = String(headers['x-slack-signature'] ?? '');
    if (!/^\d{1,12}$/.test(timestamp) || !/^v0=[0-9a-f]{64}$/.test(signature))
      throw new AppError('signature_missing', 'X-Slack-Request-Timestamp and X-Slack-Signature (v0=...) are required');
    const now = deps.clock.now().getTime();
    if (Math.abs(now - Number(timestamp) * 1000) > TOLERANCE_MS)
      throw new AppError('timestamp_out_of_tolerance', 'The request timestamp is more than 5 minutes from now');
    const expected = `v0=${createHmac('sha256', slack.signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex')}`;
    if (!timingSafeEqualString(expected, signature))
      throw new AppError('signature_invalid', "The signature does not match the app's signing secret");
    if (!(await slackIntegrationRepo.takeSignature(deps.db, `${orgId}:${signature}`, new Date(now - 2 * TOLERANCE_MS))))
      throw new AppError('message_replayed', 'This interaction was taken already');
  }

  /**
   * The Slack user as a member of the org, by the email Slack reports for them; or why they are none
   * (`notMember`). When Slack could not say who they are, `slackError` is set: that is no attempt of theirs.
   */
  async function deciderOf(
    orgId: string,
    slack: OrgSlack,
    slackUser: string,
  ): Promise<{ decider: Decider & { channel: 'slack' }; notMember?: string; slackError?: string }> {
    const decider = { userId: null, channel: 'slack' as const, externalId: slackUser };
    let email: string | null;
    try {
      email = await slack.client.userEmail(slackUser);
    } catch (error) {
      if (!(error instanceof SlackApiError)) throw error;
      const notMember = `Slack did not say who you are (${error.slackError}); nothing was decided. Try again.`;
      return { decider, notMember, slackError: error.slackError };
    }
    // users.info shows no email without the users:read.email scope: a setup fault, said as one.
    if (!email)
      return {
        decider,
        notMember:
          'You may not decide this: Slack shows this app no email for your account (its bot needs the users:read.email scope)',
      };
    const member = await memberByEmail(deps.db, orgId, email);
    if (!member)
      return { decider, notMember: "You may not decide this: no member of the organization has your Slack account's email" };
    return { decider: { ...decider, userId: member.id } };
  }

  const ephemeral = (slack: OrgSlack, channel: string | undefined, user: string, text: string) =>
    channel ? slack.client.postEphemeral({ channel, user, text }).catch(() => undefined) : Promise.resolve();

  /** A click: Approve decides; the others open their modal. Refusals are said to the clicker alone. */
  async function clicked(orgId: string, slack: OrgSlack, payload: BlockActions): Promise<void> {
    const { kind, a: actionId, t: toolCallId } = buttonOf(payload);
    const ref = { orgId, actionId, toolCallId };
    const { decider, notMember, slackError } = await deciderOf(orgId, slack, payload.user.id);
    const say = (text: string) => ephemeral(slack, payload.channel?.id, payload.user.id, text);
    if (notMember) {
      const { call } = slackError ? { call: undefined } : await deps.approvals.beforeDeciding(ref, decider);
      if (call) await deps.approvals.recordRefusals(orgId, [call.id], decider, notMember);
      return say(notMember);
    }
    const checked = await deps.approvals.beforeDeciding(ref, decider);
    const { call } = checked;
    if (checked.refusal !== undefined) {
      // Decided already (on any channel): say how, and by whom.
      if (call && call.status !== 'staged') return say(`Nothing changed. ${await decidedLine(call)}`);
      return say(`You may not decide this: ${checked.refusal}`);
    }
    if (!call) return;
    const metadata: ModalMetadata = { a: actionId, t: toolCallId, kind: kind === 'approve' ? 'edit' : kind };
    try {
      if (kind === 'approve') {
        await deps.approvals.decideWith(ref, decider, { kind: 'approve' });
        return;
      }
      const args = call.approvedInput ?? call.input;
      const view: Block =
        kind === 'edit'
          ? editModal(metadata, call.toolName, args, await schemaOf(orgId, call.toolName))
          : wordsModal(metadata, call.toolName);
      await slack.client.openView(payload.trigger_id, view);
    } catch (error) {
      if (error instanceof AppError && REFUSALS.has(error.code)) return say(`Nothing was decided: ${error.message}`);
      // The modal did not open (an expired trigger, a refused view): the clicker would see nothing happen.
      if (error instanceof SlackApiError) {
        deps.logger.warn({ orgId, slackError: error.slackError }, 'Slack did not open a modal');
        return say(`Slack did not open the form (${error.slackError}); nothing was decided. Try again, or use the console.`);
      }
      throw error;
    }
  }

  async function decidedLine(call: ToolCallRow): Promise<string> {
    const decidedBy = call.decidedByUserId ? ((await usersRepo.findById(deps.db, call.decidedByUserId))?.email ?? null) : null;
    return decisionLine({
      approval: call.approval,
      decidedBy,
      channel: call.decisionChannel,
      reason: call.decisionReason,
      decidedAt: call.decidedAt,
    });
  }

  async function schemaOf(orgId: string, toolName: string) {
    const tool = (await deps.tools.forOrg(orgId)).get(toolName);
    return flatSchemaOf(tool ? (inputJsonSchema(tool) as Record<string, unknown> | undefined) : undefined);
  }

  /** A modal's submission decides now: errors keep the modal open, in the field they are about. */
  async function submitted(orgId: string, slack: OrgSlack, payload: ViewSubmission): Promise<InteractionOutcome> {
    let metadata: ModalMetadata;
    try {
      metadata = JSON.parse(payload.view.private_metadata) as ModalMetadata;
    } catch {
      throw invalid('view.private_metadata is not ours');
    }
    const { a: actionId, t: toolCallId } = callOf(JSON.stringify({ a: metadata.a, t: metadata.t }));
    const { values } = payload.view.state;
    const { decider, notMember } = await deciderOf(orgId, slack, payload.user.id);
    const ref = { orgId, actionId, toolCallId };
    // What a person typed, trimmed and held to the bound every channel's reason has.
    const typed = (block: string) => values[block]?.value?.value?.trim().slice(0, MAX_DECISION_REASON_CHARS) ?? '';
    const words = typed('words');
    const firstBlock = Object.keys(values)[0] ?? 'words';
    const errors = (block: string, message: string) => ({ answer: { response_action: 'errors', errors: { [block]: message } } });
    if (notMember) return errors(firstBlock, notMember.slice(0, 150));
    try {
      if (metadata.kind === 'reject') await deps.approvals.decideWith(ref, decider, { kind: 'reject', reason: words || null });
      else if (metadata.kind === 'send_back') {
        if (!words) return errors('words', 'Say what the agent should do instead');
        await deps.approvals.decideWith(ref, decider, { kind: 'send_back', reason: words });
      } else {
        const checked = await deps.approvals.beforeDeciding(ref, decider);
        if (checked.refusal !== undefined) return errors(firstBlock, checked.refusal.slice(0, 150));
        const schema = await schemaOf(orgId, checked.call.toolName);
        const edited = editedArguments(values, schema, checked.call.approvedInput ?? checked.call.input);
        if ('errors' in edited) return { answer: { response_action: 'errors', errors: edited.errors } };
        await deps.approvals.decideWith(ref, decider, {
          kind: 'approve',
          arguments: edited.arguments,
          reason: typed('why') || null,
        });
      }
    } catch (error) {
      if (!(error instanceof AppError && REFUSALS.has(error.code))) throw error;
      // body/arguments/amount must be number: in the field of that argument, when there is one.
      const field = /^body\/arguments\/([^ :/]+)/.exec(error.message)?.[1];
      const block = field && values[`arg:${field}`] ? `arg:${field}` : firstBlock;
      return errors(block, error.message.replace(/^body\/arguments\/?/, '').slice(0, 150));
    }
    return { answer: null };
  }

  return {
    /** Verifies and reads one interaction: the answer for Slack now, and the rest to do after it. */
    async receive(orgId: string, headers: Record<string, unknown>, rawBody: string): Promise<InteractionOutcome> {
      const slack = await deps.slackOf(orgId);
      if (!slack) throw notFound('Slack integration');
      await verify(orgId, slack, headers, rawBody);
      const payload = parsePayload(rawBody);
      if (payload.type === 'view_submission') return submitted(orgId, slack, payload);
      buttonOf(payload);
      return {
        answer: null,
        after: () =>
          clicked(orgId, slack, payload).catch((error: unknown) =>
            deps.logger.warn({ err: error, orgId }, 'A Slack interaction failed after it was answered'),
          ),
      };
    },
  };
}

export type SlackInteractions = ReturnType<typeof createSlackInteractions>;
