import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUS_TOPICS } from '../../lib/process-bus.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';

const onPostgres = process.env.TEST_DB === 'postgres';

describe.runIf(onPostgres)('a serve wakes the workers of other processes with the commit of its actions', () => {
  let serve: TestApp;
  let listener: pg.Client;
  const heard: Array<{ channel: string; processId: number; topic: string; key: string }> = [];

  beforeAll(async () => {
    serve = await startTestApp({}, { workers: false });
    listener = new pg.Client({ connectionString: serve.container.database.url });
    await listener.connect();
    listener.on('notification', ({ channel, processId, payload }) => {
      const { t, k } = JSON.parse(payload ?? '{}') as { t: string; k: string };
      heard.push({ channel, processId, topic: t, key: k });
    });
    await listener.query('listen agent_platform_work');
    await listener.query('listen agent_platform_work_turn');
    await listener.query('listen agent_platform_invalidate');
  });
  afterAll(async () => {
    await listener?.end();
    await serve?.close();
  });

  it('one NOTIFY per statement that created actions, sent by that statement; none for an event that created none', async () => {
    const setup = await setupWebhook(serve, { eventFilter: ['order.created'] });
    const skipped = await postEvent(serve, setup, { eventType: 'order.cancelled', externalId: 'o-1', data: {} });
    expect(await skipped.json()).toMatchObject({ skipped: true, reason: 'event_type_filtered' });
    const accepted = await postEvent(serve, setup, { eventType: 'order.created', externalId: 'o-2', data: {} });
    expect(accepted.status).toBe(200);
    // The serve's bus sends its messages in order: a NOTIFY of its own for the action would come before this one.
    await serve.container.bus.publish(BUS_TOPICS.session, 'marker');
    const marker = await eventually('the marker', () => heard.find((message) => message.key === 'marker'));

    // To the worker process that holds the work turn alone (lib/work-turn.ts), not to every worker.
    const wakeUps = heard.filter((message) => message.channel.startsWith('agent_platform_work'));
    expect(wakeUps).toEqual([expect.objectContaining({ channel: 'agent_platform_work_turn', topic: BUS_TOPICS.actionRuns })]);
    // Sent by the connection that stored the action, not by the bus's own.
    expect(wakeUps[0]!.processId).not.toBe(marker.processId);
  });
});
