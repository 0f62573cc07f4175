import { sql, type Kysely } from 'kysely';

/** A call a person sent back with guidance: not run; the model gets their message as its result and goes on. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table tool_calls drop constraint tool_calls_status_check;
    alter table tool_calls add constraint tool_calls_status_check
      check (status in ('ready', 'staged', 'completed', 'failed', 'denied', 'rejected', 'expired', 'cancelled', 'sent_back'));
    alter table tool_calls drop constraint tool_calls_approval_check;
    alter table tool_calls add constraint tool_calls_approval_check
      check (approval in ('not_required', 'pending', 'approved', 'rejected', 'expired', 'cancelled', 'sent_back'));
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    update tool_calls set status = 'failed', approval = 'rejected' where approval = 'sent_back';
    alter table tool_calls drop constraint tool_calls_status_check;
    alter table tool_calls add constraint tool_calls_status_check
      check (status in ('ready', 'staged', 'completed', 'failed', 'denied', 'rejected', 'expired', 'cancelled'));
    alter table tool_calls drop constraint tool_calls_approval_check;
    alter table tool_calls add constraint tool_calls_approval_check
      check (approval in ('not_required', 'pending', 'approved', 'rejected', 'expired', 'cancelled'));
  `.execute(db);
}
