import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './helpers/eventually.ts';
import { startFakeModel } from './helpers/fake-model.ts';
import { freePort } from './helpers/http.ts';
import {
  apiClient,
  createWebhookThroughApi,
  killServerProcess,
  postSignedEvent,
  serverProcessEnvironment,
  startServerProcess,
  startWorkerProcess,
} from './helpers/server-process.ts';

const onPostgres = process.env.TEST_DB === 'postgres';
// A serve and two workers, on 2 cores beside the rest of the suite.
const TIMEOUT_MS = 120_000;

let model: Awaited<ReturnType<typeof startFakeModel>>;
let environment: Awaited<ReturnType<typeof serverProcessEnvironment>>;
beforeAll(async () => {
  model = await startFakeModel();
  // No poll in the test's time: an action runs only because a worker heard of it (or claimed on getting the turn).
  environment = await serverProcessEnvironment({ ...model.env, JOB_POLL_SECONDS: '3600' });
});
afterAll(async () => {
  await environment?.cleanup();
  await model?.close();
});

describe.runIf(onPostgres)('the work turn between worker processes', () => {
  it(
    'the worker that holds the turn runs what the serve signals; when it is killed, the next one takes the turn and the work',
    async () => {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      await startServerProcess({ ...environment.env, RUN_WORKERS: 'false' }, port);
      // Each worker's database connections name it (PGAPPNAME), so that the turn's holder can be told.
      const first = await startWorkerProcess({ ...environment.env, PGAPPNAME: 'worker-first' });
      await startWorkerProcess({ ...environment.env, PGAPPNAME: 'worker-second' });
      const api = await apiClient(base, environment.createAdmin());
      const webhook = await createWebhookThroughApi(api, { tools: [] });
      const admin = new pg.Client({ connectionString: environment.env.DATABASE_URL });
      await admin.connect();
      try {
        /** The processes that hold the turn (by their connections' names), once `name` is one of them. */
        const heldBy = (name: string) =>
          eventually(`${name} to hold the turn`, async () => {
            const { rows } = await admin.query<{ name: string }>(
              `select a.application_name as name from pg_locks l join pg_stat_activity a on a.pid = l.pid
                where l.locktype = 'advisory' and l.objsubid = 2 and l.granted
                  and l.database = (select oid from pg_database where datname = current_database())`,
            );
            return rows.some((row) => row.name === name) ? rows.map((row) => row.name) : undefined;
          });
        const completed = (actionId: string) =>
          eventually(`action ${actionId} to complete`, async () =>
            (await api('GET', `/orgs/acme/ledger/${actionId}`)).status === 'completed' ? true : undefined,
          );

        expect(await heldBy('worker-first')).toEqual(['worker-first']);
        await completed(await postSignedEvent(base, webhook, { eventType: 'step', externalId: 'one', data: {} }));

        await killServerProcess(first);
        // The lock went with the killed process's connection; the other worker, asking again, holds it.
        expect(await heldBy('worker-second')).toEqual(['worker-second']);
        await completed(await postSignedEvent(base, webhook, { eventType: 'step', externalId: 'two', data: {} }));
      } finally {
        await admin.end();
      }
    },
    TIMEOUT_MS,
  );
});
