import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { EmailIntegrationRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import type { ProcessBus } from '../../lib/process-bus.ts';
import { AppError, domainNotVerified, emailNotConfigured, notFound } from '../../lib/errors.ts';
import { savedSecretsChanged, withSavedSecrets } from '../../lib/saved-secrets.ts';
import { domainOf } from './email-content.ts';
import type { ConnectionTest, EmailIntegrationInput, PublicEmailIntegration } from './email-integration.schemas.ts';
import { inboxRoutesChanged } from './inbox-routes.ts';
import { emailIntegrationRepo } from './email-integration.repo.ts';
import { type MailClient, type MailDomain, MailProviderError } from './mail-client.ts';

const hint = (secret: string) => `...${secret.slice(-4)}`;
/** The provider's record of an address's domain, if it has one. */
const domainFor = (domains: MailDomain[], address: string) =>
  domains.find((candidate) => candidate.name.toLowerCase() === domainOf(address));

function toPublic(row: EmailIntegrationRow | undefined): PublicEmailIntegration {
  if (!row)
    return {
      configured: false,
      fromEmail: null,
      fromName: null,
      apiKeyHint: null,
      webhookSecretHint: null,
      domain: null,
      updatedAt: null,
    };
  return {
    configured: true,
    fromEmail: row.fromEmail,
    fromName: row.fromName,
    apiKeyHint: row.apiKeyHint,
    webhookSecretHint: row.webhookSecretHint,
    domain: {
      name: domainOf(row.fromEmail),
      status: row.domainStatus,
      receiving: row.domainReceiving,
      checkedAt: row.domainCheckedAt,
    },
    updatedAt: row.updatedAt,
  };
}

/** Why the provider refused the key, in words an operator can act on. */
function keyProblem(error: unknown): string {
  if (!(error instanceof MailProviderError)) throw error;
  if (error.providerName === 'restricted_api_key') {
    return 'The API key can only send email. Inbound email needs a full-access key (it reads domains and received mail).';
  }
  if (error.status === 401 || error.status === 403) return `The mail provider refused the API key: ${error.message}`;
  return error.message;
}

/** The connection test: the key, the sender's domain verified, and that domain able to receive. */
function judge(fromEmail: string, domains: MailDomain[] | string): ConnectionTest {
  if (typeof domains === 'string') {
    const notChecked = 'Not checked: the API key check failed';
    return {
      ok: false,
      checks: [
        { name: 'api_key', ok: false, message: domains },
        { name: 'domain_verified', ok: false, message: notChecked },
        { name: 'domain_receiving', ok: false, message: notChecked },
      ],
    };
  }
  const domainName = domainOf(fromEmail);
  const domain = domainFor(domains, fromEmail);
  const verified = domain?.status === 'verified';
  const receiving = domain?.capabilities?.receiving === 'enabled';
  const checks: ConnectionTest['checks'] = [
    { name: 'api_key', ok: true, message: 'The API key is accepted' },
    {
      name: 'domain_verified',
      ok: verified,
      message: !domain
        ? `${domainName} is not a domain of this provider account: add and verify it there`
        : verified
          ? `${domainName} is verified`
          : `${domainName} is ${domain.status}, not verified`,
    },
    {
      name: 'domain_receiving',
      ok: receiving,
      message: receiving
        ? `${domainName} receives email`
        : `${domainName} does not receive email: enable receiving at the provider and add its MX record`,
    },
  ];
  return { ok: checks.every((check) => check.ok), checks };
}

/**
 * An org's email integration: the provider key and webhook secret (encrypted; hints only are shown),
 * the default sender, and what the provider last said of the sender's domain.
 */
/**
 * How long a domain the provider said was verified is taken as verified without asking again (a send to an unverified
 * one fails at the provider anyway).
 */
const VERIFIED_DOMAIN_TTL_MS = 5 * 60_000;

export function createEmailIntegrationService(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  bus: Pick<ProcessBus, 'publish'>;
  mail: MailClient;
  clock: Clock;
  logger: Logger;
}) {
  /** `${orgId} ${domain}` -> until when it counts as verified (per process; a changed integration clears its org's). */
  const verifiedDomains = new Map<string, number>();
  const forgetVerified = (orgId: string) => {
    for (const key of verifiedDomains.keys()) if (key.startsWith(`${orgId} `)) verifiedDomains.delete(key);
  };

  /** The provider's domains with this key, or why they could not be read. */
  async function domainsWith(apiKey: string): Promise<MailDomain[] | string> {
    try {
      return await deps.mail(apiKey).listDomains();
    } catch (error) {
      return keyProblem(error);
    }
  }

  async function recordCheck(row: EmailIntegrationRow, domains: MailDomain[] | string): Promise<EmailIntegrationRow> {
    if (typeof domains === 'string') return row;
    const domain = domainFor(domains, row.fromEmail);
    const check = {
      status: domain?.status ?? 'not_found',
      receiving: domain ? domain.capabilities?.receiving === 'enabled' : null,
      at: deps.clock.now(),
    };
    return (await emailIntegrationRepo.recordDomainCheck(deps.db, row.orgId, row.fromEmail, check)) ?? row;
  }

  /** The input with the saved key or secret (`names`) where it leaves them out. */
  const withSaved = <Name extends 'apiKey' | 'webhookSecret'>(orgId: string, input: EmailIntegrationInput, names: Name[]) =>
    withSavedSecrets(
      input as EmailIntegrationInput & Partial<Record<Name, string>>,
      names,
      async () => {
        const row = await emailIntegrationRepo.find(deps.db, orgId);
        return row && { apiKey: row.apiKeyEncrypted, webhookSecret: row.webhookSecretEncrypted };
      },
      (sealed) => deps.box.decrypt(sealed),
      'no integration is saved',
    );

  return {
    get: async (orgId: string) => toPublic(await emailIntegrationRepo.find(deps.db, orgId)),

    /**
     * Saves the integration (the saved key and secret kept where the input leaves them out), then asks the
     * provider about the sender's domain (its answer is shown, not required).
     */
    async save(orgId: string, change: EmailIntegrationInput): Promise<PublicEmailIntegration> {
      const { input, kept } = await withSaved(orgId, change, ['apiKey', 'webhookSecret']);
      forgetVerified(orgId);
      const fields = {
        orgId,
        apiKeyEncrypted: kept.apiKey ?? deps.box.encrypt(input.apiKey),
        apiKeyHint: hint(input.apiKey),
        webhookSecretEncrypted: kept.webhookSecret ?? deps.box.encrypt(input.webhookSecret),
        webhookSecretHint: hint(input.webhookSecret),
        fromEmail: input.fromEmail,
        fromName: input.fromName ?? null,
        domainStatus: null,
        domainReceiving: null,
        domainCheckedAt: null,
      };
      const row = await emailIntegrationRepo.save(deps.db, fields, {
        apiKeyEncrypted: kept.apiKey,
        webhookSecretEncrypted: kept.webhookSecret,
      });
      if (!row) throw savedSecretsChanged('email integration');
      await inboxRoutesChanged.integration(deps.bus, orgId);
      const domains = await domainsWith(input.apiKey);
      if (typeof domains === 'string')
        deps.logger.info({ orgId, problem: domains }, 'email integration saved; its domain could not be checked');
      return toPublic(await recordCheck(row, domains));
    },

    /**
     * Refuses an address that is not on a domain the provider has verified for the org's integration
     * (asked now, not from what was last known): no integration, 409; not verified, 422. A caller
     * that has just read the org's integration passes it.
     */
    async requireVerifiedDomain(orgId: string, address: string, integration?: EmailIntegrationRow): Promise<void> {
      const row = integration ?? (await emailIntegrationRepo.find(deps.db, orgId));
      if (!row) throw emailNotConfigured();
      const key = `${orgId} ${domainOf(address)}`;
      if ((verifiedDomains.get(key) ?? 0) > deps.clock.now().getTime()) return;
      let domains: MailDomain[];
      try {
        domains = await deps.mail(deps.box.decrypt(row.apiKeyEncrypted)).listDomains();
      } catch (error) {
        // A key the provider refuses is the integration's to fix (409); a provider that does not answer is 502.
        const refused = error instanceof MailProviderError && (error.status === 401 || error.status === 403);
        throw new AppError(
          refused ? 'conflict' : 'upstream_unavailable',
          `The domain could not be checked: ${keyProblem(error)}`,
        );
      }
      const domain = domainFor(domains, address);
      if (domain?.status !== 'verified') throw domainNotVerified();
      if (verifiedDomains.size >= 10_000) verifiedDomains.clear();
      verifiedDomains.set(key, deps.clock.now().getTime() + VERIFIED_DOMAIN_TTL_MS);
    },

    async remove(orgId: string): Promise<void> {
      forgetVerified(orgId);
      if (!(await emailIntegrationRepo.remove(deps.db, orgId))) throw notFound('Email integration');
      await inboxRoutesChanged.integration(deps.bus, orgId);
    },

    /**
     * The connection test, of `input` before it is saved (with the saved key where it leaves it out), or else
     * of the saved integration (whose domain status it updates).
     */
    async test(orgId: string, change: EmailIntegrationInput | undefined): Promise<ConnectionTest> {
      if (change) {
        // The test needs the key alone: a secret left out with nothing saved is not asked for here.
        const { input } = await withSaved(orgId, change, ['apiKey']);
        return judge(change.fromEmail, await domainsWith(input.apiKey));
      }
      const row = await emailIntegrationRepo.find(deps.db, orgId);
      if (!row) throw emailNotConfigured();
      const domains = await domainsWith(deps.box.decrypt(row.apiKeyEncrypted));
      await recordCheck(row, domains);
      return judge(row.fromEmail, domains);
    },
  };
}

export type EmailIntegrationService = ReturnType<typeof createEmailIntegrationService>;
