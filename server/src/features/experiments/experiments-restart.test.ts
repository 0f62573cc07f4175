import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers/eventually.ts';
import { type ChatRequest, startFakeModel } from '../../../test/helpers/fake-model.ts';
import { freePort } from '../../../test/helpers/http.ts';
import {
  apiClient,
  createWebhookThroughApi,
  killServerProcess,
  postSignedEvent,
  serverProcessEnvironment,
  startServerProcess,
} from '../../../test/helpers/server-process.ts';

let model: Awaited<ReturnType<typeof startFakeModel>>;
let environment: Awaited<ReturnType<typeof serverProcessEnvironment>>;
const systemOf = (request: ChatRequest) => request.messages.find((message) => message.role === 'system')?.content ?? '';
beforeAll(async () => {
  model = await startFakeModel();
  // The candidate version's model answers slowly: the process is killed while a replay waits on it.
  model.script((request) => (systemOf(request).includes('Slowly.') ? { text: 'done', delayMs: 1000 } : { text: 'done' }));
  environment = await serverProcessEnvironment({ ...model.env, EXPERIMENT_CONCURRENCY: '1', ACTION_LEASE_SECONDS: '2' });
});
afterAll(async () => {
  await environment?.cleanup();
  await model?.close();
});

describe('an experiment across a SIGKILL', () => {
  it('finishes after the restart, each action replayed to one result', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let server = await startServerProcess(environment.env, port);
    const credentials = environment.createAdmin();
    let api = await apiClient(base, credentials);
    const webhook = await createWebhookThroughApi(api, { tools: [] });
    const actionIds: string[] = [];
    for (let index = 0; index < 5; index++)
      actionIds.push(await postSignedEvent(base, webhook, { eventType: 'step', externalId: `replay-${index}`, data: {} }));
    for (const actionId of actionIds)
      await eventually(`action ${actionId} to complete`, async () =>
        (await api('GET', `/orgs/acme/ledger/${actionId}`)).status === 'completed' ? true : undefined,
      );
    const [agent] = (await api('GET', '/orgs/acme/agents')).agents;
    const draft = await api('POST', `/orgs/acme/agents/${agent.id}/versions`, { instructions: 'Slowly.' });
    const { experiment } = await api('POST', `/orgs/acme/agents/${agent.id}/experiments`, {
      version: draft.version.version,
      actionIds,
    });
    await eventually('a first result, the others to come', async () => {
      const { progress } = (await api('GET', `/orgs/acme/experiments/${experiment.id}`)).experiment;
      return progress.done >= 1 && progress.done < 5 ? true : undefined;
    });

    await killServerProcess(server);
    server = await startServerProcess(environment.env, port);
    api = await apiClient(base, credentials);

    const done = await eventually(
      'the experiment to complete after the restart',
      async () => {
        const body = await api('GET', `/orgs/acme/experiments/${experiment.id}`);
        return body.experiment.state === 'completed' ? body : undefined;
      },
      60_000,
    );
    expect(done.experiment.progress).toEqual({ total: 5, done: 5 });
    expect(done.results.map((result: { actionId: string }) => result.actionId).sort()).toEqual([...actionIds].sort());
    expect(done.summary.outcomes).toEqual({ same: 5, changed: 0, failed: 0 });
    // No action was made by the experiment, before or after the restart.
    expect((await api('GET', '/orgs/acme/ledger?kind=action')).rows).toHaveLength(5);
  }, 120_000);
});
