import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table documents (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      title text not null,
      content_markdown text not null,
      pdf bytea not null,
      size_bytes integer not null,
      created_by_user_id uuid references users (id) on delete set null,
      action_id uuid references actions (id) on delete set null,
      created_at timestamptz(3) not null default now()
    );
    create index documents_org_idx on documents (org_id, created_at desc, id desc);
  `.execute(db);
}
