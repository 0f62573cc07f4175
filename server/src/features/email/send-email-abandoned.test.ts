import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it, onTestFinished } from 'vitest';
import { type FakeMailProvider, useAppWithMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import { followSendEvent, setUpSendingOrg, withSendAgainPutOff } from '../../../test/helpers/send-email.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
useAppWithMailProvider({}, (started) => ({ app, model, provider } = started));

const ABANDONED = 'Not sent: the provider never confirmed it, and nothing was left to send it again';

/** An org whose agent's email the provider did not take at once: the message waits, `sending`. */
async function waitingSend(name: string) {
  model.script(followSendEvent);
  const org = await setUpSendingOrg(app, provider, {});
  provider.failNextSends(1, 503);
  const call = await org.run({
    send: { to: `${name}-${randomUUID().slice(0, 6)}@customer.test`, subject: 'Hi', body: 'Hello.' },
  });
  return { org, call };
}

/** Moves this app's clock an hour and a minute on (back at the test's end): the waiting messages are an hour old. */
function anHourLater() {
  app.clock.advance(61 * 60_000);
  onTestFinished(() => app.clock.reset());
}

/** Runs the ten-minutely job that gives up the messages nothing is left to send, and waits for it. */
async function settleAbandonedSends() {
  const id = await app.container.jobs.enqueue('email.settle-abandoned-sends', {});
  await eventually('the job done', async () => {
    const { rows } = await sql<{ state: string }>`select state from pgboss.job where id = ${id}`.execute(app.container.db);
    return rows[0]?.state === 'completed' ? true : undefined;
  });
}

/** The states of the message's send-again jobs. */
async function sendAgainJobs(messageId: string) {
  const { rows } = await sql<{ state: string }>`select state::text from pgboss.job
     where name = 'email.send-again' and data->>'messageRowId' = ${messageId}`.execute(app.container.db);
  return rows.map((row) => row.state);
}

describe('sendEmail: a message that nothing is left to send', () => {
  it('ends failed an hour on, with why, when its job could not be queued and it could not be marked failed then', async () => {
    // The database fails twice: the job is refused, and so is ending the message failed.
    await sql`create function refuse_abandon() returns trigger language plpgsql as $$
      begin raise exception 'the database is unavailable'; end $$`.execute(app.container.db);
    await sql`create trigger refuse_send_again before insert on pgboss.job for each row
      when (new.name = 'email.send-again') execute function refuse_abandon()`.execute(app.container.db);
    await sql`create trigger refuse_failed before update on email_messages for each row
      when (new.status = 'failed') execute function refuse_abandon()`.execute(app.container.db);
    let waiting: Awaited<ReturnType<typeof waitingSend>>;
    try {
      waiting = await waitingSend('una');
    } finally {
      await sql`drop function refuse_abandon cascade`.execute(app.container.db);
    }
    const { org, call } = waiting;
    expect(call).toMatchObject({ status: 'failed', output: { value: expect.stringContaining('could not be queued') } });
    const stuck = await org.onlyMessage();
    expect(stuck).toMatchObject({ status: 'sending' });
    expect(await sendAgainJobs(stuck.id)).toEqual([]);

    await settleAbandonedSends();
    expect(await org.onlyMessage()).toMatchObject({ status: 'sending' }); // not an hour yet
    anHourLater();
    await settleAbandonedSends();
    expect(await org.onlyMessage()).toMatchObject({ id: stuck.id, status: 'failed', statusDetail: ABANDONED });
  });

  it("is shown sent by the provider's email.sent notification if the provider did take it, though it had ended failed", async () => {
    // The provider sends it but answers 503, and its job cannot be queued: it ends failed at once.
    await sql`create function refuse_send_again() returns trigger language plpgsql as $$
      begin raise exception 'the queue is unavailable'; end $$`.execute(app.container.db);
    await sql`create trigger refuse_send_again before insert on pgboss.job for each row
      when (new.name = 'email.send-again') execute function refuse_send_again()`.execute(app.container.db);
    model.script(followSendEvent);
    const org = await setUpSendingOrg(app, provider, {});
    const to = `tia-${randomUUID().slice(0, 6)}@customer.test`;
    try {
      const held = provider.holdNext('send');
      const run = org.run({ send: { to, subject: 'Maybe', body: 'It did go.' } });
      await held.held;
      held.releaseFailing(503);
      expect(await run).toMatchObject({ status: 'failed', output: { value: expect.stringContaining('may have received it') } });
    } finally {
      await sql`drop function refuse_send_again cascade`.execute(app.container.db);
    }
    expect(await org.onlyMessage()).toMatchObject({ status: 'failed', providerEmailId: null });
    const [email] = provider.sent.filter((sent) => sent.to.includes(to));
    expect((await org.notify(provider.sentEvent(email!.id, 'email.sent'))).status).toBe(200);
    await eventually('the message shown sent', async () => {
      const message = await org.onlyMessage();
      return message.status === 'sent' ? message : undefined;
    });
    expect(await org.onlyMessage()).toMatchObject({ status: 'sent', statusDetail: null, providerEmailId: email!.id });
  });

  it('ends failed once its job is over without settling it (its last attempt died with its worker); not while the job is to run', () =>
    withSendAgainPutOff(app.container.db, async () => {
      const lost = await waitingSend('liv');
      const kept = await waitingSend('kip');
      const lostMessage = await lost.org.onlyMessage();
      const keptMessage = await kept.org.onlyMessage();
      expect([lost.call.output.value, kept.call.output.value]).toEqual([
        expect.objectContaining({ queued: true }),
        expect.objectContaining({ queued: true }),
      ]);
      // pg-boss fails a job whose worker stopped sending its heartbeat; on its last attempt nothing retries it.
      await sql`update pgboss.job set state = 'failed'
         where name = 'email.send-again' and data->>'messageRowId' = ${lostMessage.id}`.execute(app.container.db);
      expect(await sendAgainJobs(lostMessage.id)).toEqual(['failed']);
      anHourLater();
      await settleAbandonedSends();
      expect(await lost.org.onlyMessage()).toMatchObject({ status: 'failed', statusDetail: ABANDONED });
      expect(await kept.org.onlyMessage()).toMatchObject({
        status: 'sending',
        statusDetail: expect.stringContaining('did not take it at once'),
      });
      expect(await sendAgainJobs(keptMessage.id)).toEqual(['created']);
    }));
});
