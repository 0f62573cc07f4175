import { randomUUID } from 'node:crypto';
import bcrypt from 'bcrypt';
import type { UserRole, UserRow } from '../../src/db/schema.ts';
import { usersRepo } from '../../src/features/users/users.repo.ts';
import type { TestApp } from './test-app.ts';

export const DEFAULT_PASSWORD = 'correct horse battery staple';
let defaultHash: Promise<string> | undefined;

export const uniqueEmail = (prefix = 'user') => `${prefix}-${randomUUID().slice(0, 8)}@example.com`;
export const uniqueSlug = (prefix = 'org') => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A user with DEFAULT_PASSWORD (hashed once per file: cost-12 hashes are slow on purpose). */
export async function createUser(
  app: TestApp,
  options: { role?: UserRole; email?: string; org?: string } = {},
): Promise<UserRow> {
  defaultHash ??= bcrypt.hash(DEFAULT_PASSWORD, Number(app.container.config.passwordHashCost));
  const email = options.email ?? uniqueEmail();
  const user = await usersRepo.insert(app.container.db, {
    id: randomUUID(),
    email,
    username: email.split('@')[0]!,
    firstName: 'Test',
    lastName: 'User',
    role: options.role ?? 'Guest',
    provider: 'credentials',
    passwordHash: await defaultHash,
    codehostId: null,
    idpId: null,
    externalProvider: null,
    externalUserId: null,
    externalTokenEncrypted: null,
  });
  if (options.org) await app.container.services.orgs.addMember(options.org, email);
  return user;
}

export async function createOrg(app: TestApp, slug = uniqueSlug()) {
  return app.container.services.orgs.create(slug, `Org ${slug}`);
}

/** A session token for the user, as a login would give. */
export async function signIn(app: TestApp, user: UserRow): Promise<string> {
  return (await app.container.services.sessions.create(user.id)).token;
}

/** A fresh tenant: an org with an Admin member signed in. */
export async function createTenant(app: TestApp) {
  const org = await createOrg(app);
  const admin = await createUser(app, { role: 'Admin', org: org.slug });
  return { org, admin, token: await signIn(app, admin) };
}
