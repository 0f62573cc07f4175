import { sql, type Kysely } from 'kysely';

/**
 * An org's email integration with the `mail` provider: its API key and webhook signing secret,
 * encrypted (only hints are ever shown), the default sender, and what was last learnt of the sender's
 * domain at the provider.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table email_integrations (
      org_id uuid primary key references organizations (id) on delete cascade,
      api_key_encrypted text not null,
      api_key_hint text not null,
      webhook_secret_encrypted text not null,
      webhook_secret_hint text not null,
      from_email text not null,
      from_name text,
      domain text not null,
      domain_status text,
      domain_receiving boolean,
      domain_checked_at timestamptz(3),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
  `.execute(db);
}
