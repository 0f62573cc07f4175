import { sql, type Kysely } from 'kysely';

/**
 * Approvals in Slack: an org's own Slack app (its bot token and signing secret, encrypted), one
 * notification row per waiting call with the message that shows it (channel and ts), `slack` as a
 * decision channel, the Slack user who decided, and the interactions already taken (replays refused).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table slack_integrations (
      org_id uuid primary key references organizations (id) on delete cascade,
      bot_token text not null,
      bot_token_hint text not null,
      signing_secret text not null,
      signing_secret_hint text not null,
      channel text not null,
      team_id text not null,
      team_name text,
      bot_user_id text,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );

    alter table approval_notifications drop constraint approval_notifications_channel_check;
    alter table approval_notifications add constraint approval_notifications_channel_check
      check (channel in ('email', 'slack'));
    alter table approval_notifications add column slack_ts text;
    create unique index approval_notifications_slack_once on approval_notifications (tool_call_id) where channel = 'slack';

    alter table tool_calls drop constraint tool_calls_decision_channel_check;
    alter table tool_calls add constraint tool_calls_decision_channel_check
      check (decision_channel in ('console', 'api', 'email_link', 'email_reply', 'slack'));
    alter table approval_attempts drop constraint approval_attempts_channel_check;
    alter table approval_attempts add constraint approval_attempts_channel_check
      check (channel in ('console', 'api', 'email_link', 'email_reply', 'slack'));
    alter table tool_call_approvals drop constraint tool_call_approvals_channel_check;
    alter table tool_call_approvals add constraint tool_call_approvals_channel_check
      check (channel in ('console', 'api', 'email_link', 'email_reply', 'slack'));

    -- Who decided, as the channel knows them (a Slack user id), beside the member.
    alter table tool_calls add column decided_by_external_id text;
    alter table tool_call_approvals add column external_user_id text;
    alter table approval_attempts add column external_user_id text;

    create table slack_interactions_seen (
      signature text primary key,
      created_at timestamptz(3) not null default now()
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table slack_interactions_seen;
    alter table approval_attempts drop column external_user_id;
    alter table tool_call_approvals drop column external_user_id;
    alter table tool_calls drop column decided_by_external_id;
    delete from approval_notifications where channel = 'slack';
    drop index approval_notifications_slack_once;
    alter table approval_notifications drop column slack_ts;
    drop table slack_integrations;
  `.execute(db);
}
