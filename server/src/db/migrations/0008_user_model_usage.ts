import { sql, type Kysely } from 'kysely';

/**
 * Model messages used by a user whose external auth provider sets limits (getUserLimits), per limit
 * window: the window is named by the reset date the provider gave, so a new reset date starts a new
 * count without any job resetting the old one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table user_model_usage (
      user_id uuid not null references users (id) on delete cascade,
      window_key text not null,
      messages integer not null default 0,
      updated_at timestamptz(3) not null default now(),
      primary key (user_id, window_key)
    );
  `.execute(db);
}
