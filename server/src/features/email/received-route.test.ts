import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type FakeMailProvider, setUpEmailOrg, useAppWithMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { createTenant } from '../../../test/helpers/factories.ts';
import { type ChatRequest, calledTools, eventData } from '../../../test/helpers/fake-model.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { routesOfReceived } from './received-route.repo.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
useAppWithMailProvider({}, (started) => ({ app, model, provider } = started));

const replyToSender = (request: ChatRequest) =>
  calledTools(request)
    ? { text: 'Replied.' }
    : { toolCalls: [{ name: 'sendEmail', arguments: { to: eventData(request).from, subject: 'x', body: 'On it.' } }] };

describe('the routes of received emails', () => {
  it('reads the routes of many emails in one statement, each by its own org, recipients and sender, in order', async () => {
    const org = await setUpEmailOrg(app, provider);
    const quiet = await setUpEmailOrg(app, provider, { autoRespond: false });
    const bare = await createTenant(app);
    const { db } = app.container.database;
    const stored = provider.receive({ from: 'a@customer.test', to: [org.inbox.emailAddress], subject: 'Stored', text: 'x' });
    model.script(replyToSender);
    await org.notify(provider.receivedEvent(stored.id));
    await eventually('the first email stored', async () => {
      const { threads } = await (await org.api('GET', '/email/threads')).json();
      return threads.length === 1 || undefined;
    });

    const routes = await routesOfReceived(db, [
      { orgId: org.org.id, recipients: ['nobody@else.test', org.inbox.emailAddress], providerEmailId: 'new-1', from: 'a@b.test' },
      { orgId: bare.org.id, recipients: [org.inbox.emailAddress], providerEmailId: 'new-2', from: 'a@b.test' },
      { orgId: quiet.org.id, recipients: [quiet.inbox.emailAddress], providerEmailId: stored.id, from: org.inbox.emailAddress },
      { orgId: org.org.id, recipients: [], providerEmailId: stored.id, from: `agents@${org.domain}` },
      { orgId: org.org.id, recipients: [quiet.inbox.emailAddress], providerEmailId: 'new-3', from: 'A@b.test' },
    ]);
    expect(routes).toHaveLength(5);
    expect(routes[0]).toMatchObject({
      stored: false,
      inbox: { id: org.inbox.id, orgId: org.org.id, emailAddress: org.inbox.emailAddress, displayName: 'Help desk' },
      responders: [{ agentId: org.agentId, agentName: 'Support', runAsUserId: expect.any(String) }],
      sender: { address: 'a@b.test', own: false },
    });
    // An org without an integration has no route; another org's inbox is not this one's.
    expect(routes[1]).toBeUndefined();
    expect(routes[2]).toMatchObject({ stored: false, inbox: { id: quiet.inbox.id }, responders: [], sender: { own: true } });
    expect(routes[3]).toMatchObject({ stored: true, inbox: undefined, responders: [], sender: { own: true } });
    expect(routes[4]).toMatchObject({ stored: false, inbox: undefined, sender: { own: false } });
    expect(await routesOfReceived(db, [])).toEqual([]);

    // Values that mean something in an array literal travel as themselves, each in its own place.
    const odd = await routesOfReceived(db, [
      { orgId: org.org.id, recipients: ['"},{', org.inbox.emailAddress], providerEmailId: 'NULL', from: 'a"b\\c,{d}' },
      { orgId: org.org.id, recipients: [org.inbox.emailAddress], providerEmailId: stored.id, from: '' },
    ]);
    expect(odd[0]).toMatchObject({ stored: false, inbox: { id: org.inbox.id }, sender: { address: 'a"b\\c,{d}', own: false } });
    expect(odd[1]).toMatchObject({ stored: true, inbox: { id: org.inbox.id }, sender: { address: '', own: false } });
  });

  it('decides by the fetched email’s sender when the notification names another', async () => {
    model.script(replyToSender);
    const org = await setUpEmailOrg(app, provider);
    const other = await setUpEmailOrg(app, provider, { autoRespond: false });
    const customer = `c-${randomUUID().slice(0, 8)}@customer.test`;
    const ownInDisguise = provider.receive({
      from: other.inbox.emailAddress,
      to: [org.inbox.emailAddress],
      subject: 'Own',
      text: 'x',
    });
    const customerInDisguise = provider.receive({ from: customer, to: [org.inbox.emailAddress], subject: 'Customer', text: 'x' });
    const notified = (id: string, from: string) => {
      const event = provider.receivedEvent(id);
      return { ...event, data: { ...event.data, from } };
    };
    await org.notify(notified(ownInDisguise.id, customer));
    await org.notify(notified(customerInDisguise.id, other.inbox.emailAddress));
    await eventually(
      'the customer answered',
      async () => provider.sent.some((email) => email.to.includes(customer)) || undefined,
    );
    const { rows } = await (await org.api('GET', '/ledger?source=email')).json();
    const byEmail = Object.fromEntries(
      rows.map((row: { externalId: string; status: string; reason: string | null }) => [row.externalId, row]),
    );
    expect(byEmail[ownInDisguise.id]).toMatchObject({
      status: 'skipped',
      reason: 'not answered automatically: it was sent from one of our own addresses',
    });
    expect(byEmail[customerInDisguise.id]).toMatchObject({ reason: null });
    expect(byEmail[customerInDisguise.id].status).not.toBe('skipped');
    expect(provider.sent.filter((email) => email.to.includes(other.inbox.emailAddress))).toEqual([]);
  });
});
