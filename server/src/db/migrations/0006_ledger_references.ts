import { sql, type Kysely } from 'kysely';

/**
 * What ingest writes, per event, and nothing it need not.
 *
 * The ledger (actions and webhook deliveries) records the webhook, agent, rule and run-as user an
 * event was taken with, as ids, without foreign keys to them: deleting a webhook, agent or rule no
 * longer rewrites (and scans) the ledger to null them, the ledger keeps which one it was, and ingest
 * stops paying six key checks per event (the single largest cost of its statement in PostgreSQL's
 * profile). The runtime treats an id whose row is gone as missing (actionsRepo.runContext). A
 * delivery's action is written in the same statement as the delivery, and actions are never deleted
 * but with their organization, whose keys stay.
 *
 * actions_org_idx served no query (the ledger is read from webhook_deliveries by its own org index,
 * and reaches an action by its id) but cost an index insert per event.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table actions
      drop constraint actions_webhook_id_fkey,
      drop constraint actions_agent_id_fkey,
      drop constraint actions_action_rule_id_fkey,
      drop constraint actions_run_as_user_id_fkey;
    alter table webhook_deliveries
      drop constraint webhook_deliveries_webhook_id_fkey,
      drop constraint webhook_deliveries_action_id_fkey;
    drop index actions_org_idx;
  `.execute(db);
}
