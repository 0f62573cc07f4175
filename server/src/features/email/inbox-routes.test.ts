import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { setUpEmailOrg, useAppWithMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { type FakeWebhook, postSignedNotification as postSigned } from '../../../test/helpers/fake-mail-provider.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { notificationsRepo } from './notifications.repo.ts';
import { createThreadMail } from './thread-mail.ts';
import { createSecretBox } from '../../lib/crypto.ts';

/**
 * The mail intake keeps the org of each inbox address (features/email/inbox-routes.ts): what the
 * console changes must count from the next notification, in this process at once and in the others
 * as the bus tells them.
 */
describe('the mail intake’s inbox routes', () => {
  let app: TestApp;
  let provider: Parameters<typeof setUpEmailOrg>[1];
  useAppWithMailProvider({}, (started) => {
    ({ app, provider } = started);
  });

  type EmailOrg = Awaited<ReturnType<typeof setUpEmailOrg>>;
  const notificationTo = (to: string) =>
    provider.receivedEvent(provider.receive({ from: 'dave@customer.test', to: [to], subject: 'Hi', text: 'Hi' }).id);
  /** The HTTP status and the body's fields that matter. */
  const answerOf = async (response: Response) => ({ http: response.status, ...(await response.json()) });
  const integrationWith = (org: EmailOrg, webhookSecret: string) =>
    org.api('PUT', '/email/integration', { apiKey: org.apiKey, fromEmail: `agents@${org.domain}`, webhookSecret });

  it('reads the routes of a known address once, and every recipient it has not seen in one statement', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const reads = vi.spyOn(notificationsRepo, 'inboxOrgs');
    try {
      const first = notificationTo(org.inbox.emailAddress);
      first.data.cc = [`nobody-${randomBytes(4).toString('hex')}@${org.domain}`, 'Someone <someone@elsewhere.test>'];
      expect(await answerOf(await org.notify(first))).toMatchObject({ http: 200, status: 'accepted' });
      expect(reads).toHaveBeenCalledTimes(1);
      expect(reads.mock.calls[0]![1]).toHaveLength(3);
      for (let n = 0; n < 3; n++) {
        expect(await answerOf(await org.notify(notificationTo(org.inbox.emailAddress)))).toMatchObject({ http: 200 });
      }
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
    }
  });

  it('an inbox created after a notification to its address was ignored takes the next one', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const address = `sales@${org.domain}`;
    expect(await answerOf(await org.notify(notificationTo(address)))).toMatchObject({
      http: 200,
      status: 'ignored',
      reason: 'no inbox for any recipient of the email',
    });
    const created = await org.api('POST', '/email/inboxes', { emailAddress: address, displayName: 'Sales' });
    expect(created.status).toBe(201);
    expect(await answerOf(await org.notify(notificationTo(address)))).toMatchObject({ http: 200, status: 'accepted' });
  });

  it('a removed inbox takes no more notifications', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    expect(await answerOf(await org.notify(notificationTo(org.inbox.emailAddress)))).toMatchObject({ status: 'accepted' });
    expect((await org.api('DELETE', `/email/inboxes/${org.inbox.id}`)).status).toBe(204);
    expect(await answerOf(await org.notify(notificationTo(org.inbox.emailAddress)))).toMatchObject({
      http: 200,
      status: 'ignored',
    });
  });

  it('a new webhook secret verifies at once and the old one no more; a removed integration verifies nothing', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    expect(await answerOf(await org.notify(notificationTo(org.inbox.emailAddress)))).toMatchObject({ status: 'accepted' });
    const rotated: FakeWebhook = { url: org.webhook.url, secret: `whsec_${randomBytes(24).toString('base64')}` };
    expect((await integrationWith(org, rotated.secret)).status).toBe(200);

    expect(await answerOf(await org.notify(notificationTo(org.inbox.emailAddress)))).toMatchObject({
      http: 401,
      code: 'signature_invalid',
    });
    const withNew = await postSigned(rotated, notificationTo(org.inbox.emailAddress));
    expect(await answerOf(withNew)).toMatchObject({ http: 200, status: 'accepted' });

    expect((await org.api('DELETE', '/email/integration')).status).toBe(204);
    expect(await answerOf(await postSigned(rotated, notificationTo(org.inbox.emailAddress)))).toMatchObject({
      http: 200,
      status: 'ignored',
    });
    // Saved again: its inbox, known meanwhile to have no integration, takes notifications again.
    expect((await integrationWith(org, rotated.secret)).status).toBe(200);
    expect(await answerOf(await postSigned(rotated, notificationTo(org.inbox.emailAddress)))).toMatchObject({
      status: 'accepted',
    });
  });

  it('the inbox made for replies to the approvals’ emails takes notifications at once', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const address = `agents@${org.domain}`;
    expect(await answerOf(await org.notify(notificationTo(address)))).toMatchObject({ status: 'ignored' });
    const { db, bus, logger } = app.container;
    const threadMail = createThreadMail({
      db,
      bus,
      logger,
      box: createSecretBox('a test key of no use'),
      deliver: () => Promise.reject(new Error('nothing is sent here')),
    });
    await threadMail.ensureInbox(org.org.id, address, 'Approvals');
    expect(await answerOf(await org.notify(notificationTo(address)))).toMatchObject({ http: 200, status: 'accepted' });
  });

  // Two containers on one PostgreSQL database stand for two server processes.
  it.runIf(process.env.TEST_DB === 'postgres')('a change in another process reaches this one’s routes by the bus', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const { createContainer } = await import('../../container.ts');
    const { openDatabase } = await import('../../db/database.ts');
    const other = await createContainer(app.container.config, {
      database: await openDatabase({ url: app.container.database.url }),
    });
    try {
      expect(await answerOf(await org.notify(notificationTo(org.inbox.emailAddress)))).toMatchObject({ status: 'accepted' });
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      await other.services.emailIntegration.save(org.org.id, {
        apiKey: org.apiKey,
        fromEmail: `agents@${org.domain}`,
        webhookSecret: secret,
      });
      await eventually(
        'the new secret, in this process',
        async () =>
          (await postSigned({ url: org.webhook.url, secret }, notificationTo(org.inbox.emailAddress))).status === 200
            ? true
            : undefined,
        5_000,
      );
      await other.services.inboxes.remove(org.org.id, org.inbox.id);
      await eventually(
        'the removed inbox, in this process',
        async () => {
          const response = await postSigned({ url: org.webhook.url, secret }, notificationTo(org.inbox.emailAddress));
          return (await response.json()).status === 'ignored' ? true : undefined;
        },
        5_000,
      );
    } finally {
      await other.bus.close();
      await other.database.close();
    }
  });
});
