import { sql, type Kysely } from 'kysely';

/**
 * Email in and out. An email thread is a thread of channel `email` that belongs to its org (no user);
 * its messages keep their headers (Message-ID, In-Reply-To, References) so that a reply finds its
 * thread by any id we know: the sender's, ours, and the provider's rewrite of ours. Received
 * attachments are stored with their bytes (the provider's links expire in an hour). Notifications
 * from the provider are committed before they are answered, once per (org, svix-id), and processed
 * by a job. An action may come from an email: it names the message it answers and the approval
 * rules it was created with (an inbox assignment's, as it has no action rule). The ledger shows
 * an email's delivery like a webhook's, marked by its source.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table threads alter column user_id drop not null;
    create index threads_org_channel on threads (org_id, channel, updated_at desc, id desc);

    create table email_messages (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      thread_id uuid not null references threads (id) on delete cascade,
      inbox_id uuid references email_inboxes (id) on delete set null,
      direction text not null,
      provider_email_id text,
      message_id text,
      provider_message_id text,
      in_reply_to text,
      reference_ids jsonb not null default '[]',
      from_address text not null,
      to_addresses jsonb not null default '[]',
      cc_addresses jsonb not null default '[]',
      subject text not null,
      sent_at timestamptz(3),
      text_body text not null default '',
      html_body text,
      headers jsonb not null default '{}',
      status text not null,
      status_detail text,
      action_id uuid references actions (id) on delete set null,
      tool_call_id text,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index email_messages_thread on email_messages (thread_id, created_at, id);
    create unique index email_messages_provider_email on email_messages (provider_email_id, org_id, direction);
    create unique index email_messages_tool_call on email_messages (action_id, tool_call_id) where tool_call_id is not null;
    create index email_messages_message_id on email_messages (org_id, message_id);
    create index email_messages_provider_message_id on email_messages (org_id, provider_message_id);

    create table email_attachments (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      message_id uuid not null references email_messages (id) on delete cascade,
      position int not null,
      provider_attachment_id text,
      document_id uuid references documents (id) on delete set null,
      filename text not null,
      content_type text not null,
      content_disposition text,
      content_id text,
      size_bytes bigint not null,
      content bytea,
      status text not null,
      error text,
      created_at timestamptz(3) not null default now()
    );
    create index email_attachments_message on email_attachments (message_id, position);

    create table email_delivery_events (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      message_id uuid not null references email_messages (id) on delete cascade,
      type text not null,
      data jsonb,
      occurred_at timestamptz(3) not null,
      created_at timestamptz(3) not null default now()
    );
    create index email_delivery_events_message on email_delivery_events (message_id, occurred_at);

    create table email_suppressions (
      org_id uuid not null references organizations (id) on delete cascade,
      address text not null,
      reason text not null,
      detail text,
      message_id uuid references email_messages (id) on delete set null,
      created_at timestamptz(3) not null default now(),
      primary key (org_id, address)
    );
    create index email_suppressions_org on email_suppressions (org_id, created_at desc, address);

    create table email_notifications (
      id uuid primary key,
      org_id uuid references organizations (id) on delete cascade,
      svix_id text not null,
      event_type text not null,
      status text not null,
      reason text,
      payload jsonb,
      headers jsonb not null default '{}',
      attempts int not null default 0,
      last_error text,
      lease_expires_at timestamptz(3),
      received_at timestamptz(3) not null default now(),
      processed_at timestamptz(3)
    );
    create unique index email_notifications_once on email_notifications (org_id, svix_id);
    create index email_notifications_unfinished on email_notifications (received_at) where status = 'received';

    alter table actions add column source text not null default 'webhook';
    alter table actions add column email_message_id uuid references email_messages (id) on delete set null;
    alter table actions add column approval_rules jsonb;
    create index actions_email_message on actions (email_message_id) where email_message_id is not null;
    alter table webhook_deliveries add column source text not null default 'webhook';
  `.execute(db);
}
