import { type Kysely, sql } from 'kysely';
import type { EmailInboxRow } from '../../db/email-schema.ts';
import { uncountedIds } from '../../db/prepared.ts';
import type { ArgumentRule, DB, NotifyChannel } from '../../db/schema.ts';
import { ownAddress } from './email-messages.repo.ts';

/** A received email, as its notification names it: what its route is read by. */
export interface ReceivedEmailRef {
  orgId: string;
  /** Every address it was delivered to, in the notification's order: the first with an inbox is the one it goes to. */
  recipients: string[];
  providerEmailId: string;
  /** The sender's address as the notification gives it (lower case); whether it is one of ours is read with the route. */
  from: string;
}

/** An agent of the inbox that answers its mail automatically; `runAsUserId` is null once its assigner is gone. */
export interface AutoResponder {
  agentId: string;
  agentName: string;
  approvalRules: unknown;
  argumentRules: ArgumentRule[];
  notify: NotifyChannel[];
  runAsUserId: string | null;
}

/** Where a received email goes: undefined when its org has no integration (any more). */
export type ReceivedRoute =
  | {
      apiKeyEncrypted: string;
      /** Whether the email was stored already (processed before). */
      stored: boolean;
      inbox: Pick<EmailInboxRow, 'id' | 'orgId' | 'emailAddress' | 'displayName'> | undefined;
      /** The inbox's agents that answer automatically, primary first. */
      responders: AutoResponder[];
      /** The notification's sender, and whether it is one of our own addresses (mail between two agents here is a loop). */
      sender: { address: string; own: boolean };
    }
  | undefined;

interface RouteRow {
  position: number;
  apiKeyEncrypted: string;
  stored: boolean;
  inboxId: string | null;
  emailAddress: string | null;
  displayName: string | null;
  responders: AutoResponder[];
  fromOwnAddress: boolean;
}

/**
 * What processing a received email reads before it fetches the email, for every email of a claim in
 * one statement (each a read of its own before, twice: docs/benchmarks.md): the org's integration
 * key, whether the email was stored already, the inbox of its first recipient that has one, that
 * inbox's automatic responders, and whether the sender is one of ours. In the order given.
 */
export async function routesOfReceived(db: Kysely<DB>, emails: ReceivedEmailRef[]): Promise<ReceivedRoute[]> {
  const recipients = emails.flatMap((email, position) => email.recipients.map((address) => ({ position, address })));
  const orgIds = uncountedIds(emails.map((email) => email.orgId));
  const { rows } = await sql<RouteRow>`
    with received as (
      select * from unnest(${orgIds}, ${emails.map((email) => email.providerEmailId)}::text[],
        ${emails.map((email) => email.from)}::text[]) with ordinality as r(org_id, provider_email_id, from_address, position)
    ),
    first_inbox as (
      select distinct on (t.position) t.position, i.id, i.email_address, i.display_name
      from unnest(${recipients.map((recipient) => recipient.position + 1)}::int[],
        ${recipients.map((recipient) => recipient.address)}::text[]) with ordinality as t(position, address, rank)
      join received r on r.position = t.position
      join email_inboxes i on i.org_id = r.org_id and i.email_address = t.address
      order by t.position, t.rank
    )
    select r.position, x.api_key_encrypted, i.id as inbox_id, i.email_address, i.display_name,
      exists (select 1 from email_messages m
        where m.provider_email_id = r.provider_email_id and m.org_id = r.org_id and m.direction = 'inbound') as stored,
      ${ownAddress(sql.ref('r.from_address'))} as from_own_address,
      coalesce((
        select json_agg(json_build_object('agentId', a.agent_id, 'agentName', g.name, 'approvalRules', a.approval_rules,
          'argumentRules', a.argument_rules, 'notify', a.notify, 'runAsUserId', u.id) order by a.is_primary desc, a.created_at)
        from email_inbox_agents a join agents g on g.id = a.agent_id left join users u on u.id = a.assigned_by_user_id
        where a.inbox_id = i.id and a.auto_respond), '[]') as responders
    from received r
    join email_integrations x on x.org_id = r.org_id
    left join first_inbox i on i.position = r.position`.execute(db);
  const routes: ReceivedRoute[] = emails.map(() => undefined);
  for (const row of rows) {
    const { orgId, from } = emails[Number(row.position) - 1]!;
    routes[Number(row.position) - 1] = {
      apiKeyEncrypted: row.apiKeyEncrypted,
      stored: row.stored,
      inbox:
        row.inboxId && row.emailAddress && row.displayName !== null
          ? { id: row.inboxId, orgId, emailAddress: row.emailAddress, displayName: row.displayName }
          : undefined,
      responders: row.responders,
      sender: { address: from, own: row.fromOwnAddress },
    };
  }
  return routes;
}
