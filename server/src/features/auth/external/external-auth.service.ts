import type { Kysely } from 'kysely';
import type { DB, UserRow } from '../../../db/schema.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { AppError } from '../../../lib/errors.ts';
import { usersRepo } from '../../users/users.repo.ts';
import type { UsersService } from '../../users/users.service.ts';
import type { RequestMeta, SignedIn } from '../auth.service.ts';
import type { SessionsService } from '../sessions.service.ts';
import type { ExternalAuthRegistry, ExternalUserData } from './registry.ts';

export function createExternalAuthService(deps: {
  db: Kysely<DB>;
  registry: ExternalAuthRegistry;
  users: UsersService;
  sessions: SessionsService;
  box: SecretBox;
  defaultProvider?: string;
}) {
  function resolveProvider(providerName: string | undefined) {
    const names = deps.registry.providerNames();
    const name = providerName ?? deps.defaultProvider ?? (names.length === 1 ? names[0] : undefined);
    const provider = name ? deps.registry.getExternalAuthProvider(name) : undefined;
    if (!provider) {
      const known = names.length ? `known: ${names.join(', ')}` : 'none is configured';
      throw new AppError(
        'unknown_auth_provider',
        `${name ? `Unknown auth provider "${name}"` : 'Name an auth provider'} (${known})`,
      );
    }
    return provider;
  }

  /** Finds the user by (provider, externalUserId), else creates one; the token is stored encrypted. */
  async function upsertUser(providerName: string, data: ExternalUserData, tokenEncrypted: string): Promise<UserRow> {
    const role = data.isAdmin === undefined ? undefined : data.isAdmin ? ('Admin' as const) : ('Guest' as const);
    const existing = await usersRepo.findByExternalId(deps.db, providerName, data.externalUserId);
    if (existing) {
      return usersRepo.update(deps.db, existing.id, {
        externalTokenEncrypted: tokenEncrypted,
        ...(role ? { role } : {}),
        ...(data.firstName ? { firstName: data.firstName } : {}),
        ...(data.lastName ? { lastName: data.lastName } : {}),
      });
    }
    return deps.users.create({
      email: data.email,
      role: role ?? 'Guest',
      provider: providerName,
      firstName: data.firstName ?? null,
      lastName: data.lastName ?? null,
      externalProvider: providerName,
      externalUserId: data.externalUserId,
      externalTokenEncrypted: tokenEncrypted,
    });
  }

  return {
    /** The names of the external token providers, for `POST /auth/external`'s `providerName`. */
    providerNames: () => deps.registry.providerNames(),
    async authenticate(authToken: string, providerName: string | undefined, meta: RequestMeta): Promise<SignedIn> {
      const provider = resolveProvider(providerName);
      const result = await provider
        .validateToken(authToken)
        .catch(() => ({ isValid: false, error: 'The provider failed to validate the token', userData: undefined }));
      if (!result.isValid || !result.userData) {
        throw new AppError('invalid_external_token', result.error ? `Invalid auth token: ${result.error}` : 'Invalid auth token');
      }
      const user = await upsertUser(provider.name, result.userData, deps.box.encrypt(authToken));
      return { user, ...(await deps.sessions.create(user.id, meta)) };
    },
  };
}

export type ExternalAuthService = ReturnType<typeof createExternalAuthService>;
