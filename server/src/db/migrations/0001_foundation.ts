import { sql, type Kysely } from 'kysely';

// Timestamps keep milliseconds (timestamptz(3)): exactly what a JS Date holds, so keyset cursors
// built from a row's created_at match it again and no row is skipped between pages.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table organizations (
      id uuid primary key,
      slug text not null unique check (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
      name text not null,
      created_at timestamptz(3) not null default now()
    );

    create table users (
      id uuid primary key,
      email text not null,
      username text not null,
      first_name text,
      last_name text,
      role text not null check (role in ('Admin', 'Guest')),
      provider text not null,
      password_hash text,
      codehost_id text unique,
      idp_id text unique,
      external_provider text,
      external_user_id text,
      external_token_encrypted text,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now(),
      unique (external_provider, external_user_id)
    );
    create unique index users_email_key on users (lower(email));

    create table memberships (
      org_id uuid not null references organizations (id) on delete cascade,
      user_id uuid not null references users (id) on delete cascade,
      created_at timestamptz(3) not null default now(),
      primary key (org_id, user_id)
    );
    create index memberships_user_idx on memberships (user_id);

    create table sessions (
      id uuid primary key,
      token_hash text not null unique,
      user_id uuid not null references users (id) on delete cascade,
      expires_at timestamptz(3) not null,
      created_at timestamptz(3) not null default now(),
      ip_address text,
      user_agent text
    );
    create index sessions_user_idx on sessions (user_id);

    create table password_reset_tokens (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      token_hash text not null unique,
      expires_at timestamptz(3) not null,
      used_at timestamptz(3),
      created_at timestamptz(3) not null default now()
    );
    create index password_reset_tokens_user_idx on password_reset_tokens (user_id);

    create table threads (
      id uuid primary key,
      org_id uuid references organizations (id) on delete cascade,
      user_id uuid not null references users (id) on delete cascade,
      channel text not null,
      title text not null,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index threads_user_created_idx on threads (user_id, created_at desc, id desc);
  `.execute(db);
}
