import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** Kysely's view of the tables (camelCase in TypeScript, snake_case in SQL via CamelCasePlugin). */
type CreatedAt = ColumnType<Date, Date | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | undefined, Date>;

export type UserRole = 'Admin' | 'Guest';

export interface OrganizationsTable {
  id: string;
  slug: string;
  name: string;
  createdAt: CreatedAt;
}

export interface UsersTable {
  id: string;
  email: string;
  username: string;
  firstName: string | null;
  lastName: string | null;
  role: UserRole;
  provider: string;
  passwordHash: string | null;
  codehostId: string | null;
  idpId: string | null;
  externalProvider: string | null;
  externalUserId: string | null;
  externalTokenEncrypted: string | null;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface MembershipsTable {
  orgId: string;
  userId: string;
  createdAt: CreatedAt;
}

export interface SessionsTable {
  id: string;
  tokenHash: string;
  userId: string;
  expiresAt: Date;
  createdAt: CreatedAt;
  ipAddress: string | null;
  userAgent: string | null;
}

export interface PasswordResetTokensTable {
  id: string;
  userId: string;
  tokenHash: string;
  expiresAt: Date;
  usedAt: Date | null;
  createdAt: CreatedAt;
}

export interface ThreadsTable {
  id: string;
  orgId: string | null;
  userId: string;
  channel: string;
  title: string;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface DB {
  organizations: OrganizationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  sessions: SessionsTable;
  passwordResetTokens: PasswordResetTokensTable;
  threads: ThreadsTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type OrganizationRow = Selectable<OrganizationsTable>;
export type SessionRow = Selectable<SessionsTable>;
export type ThreadRow = Selectable<ThreadsTable>;
export type { Generated };
