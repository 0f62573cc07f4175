import type { Kysely } from 'kysely';
import type { DB, UserRow } from '../../../db/schema.ts';
import { timingSafeEqualString } from '../../../lib/crypto.ts';
import { AppError } from '../../../lib/errors.ts';
import { usersRepo } from '../../users/users.repo.ts';
import type { UsersService } from '../../users/users.service.ts';
import type { RequestMeta, SignedIn } from '../auth.service.ts';
import type { SessionsService } from '../sessions.service.ts';
import type { OAuthProfile, OAuthProvider, OAuthProviderName } from './oauth-provider.ts';

const PROVIDER_COLUMN = { codehost: 'codehostId', idp: 'idpId' } as const;

/** The state sent back must be the one kept in this browser's cookie, or the login was not started here. */
function assertStateMatches(callbackUrl: URL, checks: Record<string, string | undefined>): void {
  const returned = callbackUrl.searchParams.get('state');
  if (!checks.state || !returned || !timingSafeEqualString(returned, checks.state)) {
    throw new AppError('oauth_state_mismatch', 'OAuth state is missing or does not match; start the login again');
  }
}

export function createOAuthService(deps: {
  db: Kysely<DB>;
  users: UsersService;
  sessions: SessionsService;
  providers: Partial<Record<OAuthProviderName, OAuthProvider>>;
}) {
  function provider(name: OAuthProviderName): OAuthProvider {
    const found = deps.providers[name];
    if (!found) throw new AppError('provider_not_configured', `The ${name} login is not configured on this server`);
    return found;
  }

  /**
   * The account for a provider identity: the one already linked to it; else the account with the
   * same email, linked only when the provider says that email is verified; else a new Guest.
   */
  async function findOrCreateUser(name: OAuthProviderName, profile: OAuthProfile): Promise<UserRow> {
    const column = PROVIDER_COLUMN[name];
    const linked = await usersRepo.findByProviderId(deps.db, column, profile.providerId);
    const names = {
      ...(profile.firstName ? { firstName: profile.firstName } : {}),
      ...(profile.lastName ? { lastName: profile.lastName } : {}),
    };
    if (linked) return Object.keys(names).length ? usersRepo.update(deps.db, linked.id, names) : linked;
    if (!profile.email) throw new AppError('oauth_exchange_failed', 'The provider did not share an email address');
    const sameEmail = await usersRepo.findByEmail(deps.db, profile.email);
    if (sameEmail) {
      if (!profile.emailVerified) {
        throw new AppError('email_in_use', 'An account with this email exists; verify the email at the provider to link it');
      }
      return usersRepo.update(deps.db, sameEmail.id, { [column]: profile.providerId, ...names });
    }
    return deps.users.create({
      email: profile.email,
      role: 'Guest',
      provider: name,
      username: profile.username ?? undefined,
      firstName: profile.firstName,
      lastName: profile.lastName,
      [column]: profile.providerId,
    });
  }

  return {
    begin: (name: OAuthProviderName) => provider(name).begin(),

    async complete(
      name: OAuthProviderName,
      callbackUrl: URL,
      checks: Record<string, string | undefined>,
      meta: RequestMeta,
    ): Promise<SignedIn> {
      assertStateMatches(callbackUrl, checks);
      const profile = await provider(name).complete(callbackUrl, checks);
      const user = await findOrCreateUser(name, profile);
      return { user, ...(await deps.sessions.create(user.id, meta)) };
    },

    /** Throws provider_not_configured for a provider without client id and secret. */
    assertConfigured: (name: OAuthProviderName) => void provider(name),
    /** The OAuth logins this server offers (a sign-in page shows their buttons). */
    configured: (): OAuthProviderName[] => (['codehost', 'idp'] as const).filter((name) => deps.providers[name] !== undefined),
  };
}

export type OAuthService = ReturnType<typeof createOAuthService>;
