import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers/eventually.ts';
import { startFakeModel, toolResults, type ChatRequest } from '../../../test/helpers/fake-model.ts';
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
let countLog: string;
beforeAll(async () => {
  model = await startFakeModel();
  environment = await serverProcessEnvironment({
    ...model.env,
    ACTION_LEASE_SECONDS: '1',
    TOOL_MODULES: join(import.meta.dirname, '../../../test/fixtures/counting-tool.ts'),
  });
  countLog = join(environment.env.DATA_DIR!, 'counted-steps.log');
  writeFileSync(countLog, '');
  environment.env.COUNTING_TOOL_LOG = countLog;
});
afterAll(async () => {
  await environment?.cleanup();
  await model?.close();
});

const isFor = (label: string) => (request: ChatRequest) =>
  request.messages.some((message) => message.role === 'user' && message.content?.includes(`"label": "${label}"`));

describe('an action across a SIGKILL', () => {
  it('resumes from what was stored: a finished tool call is not run again; a staged call can be approved after the restart', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let server = await startServerProcess(environment.env, port);
    const credentials = environment.createAdmin();
    let api = await apiClient(base, credentials);
    const webhook = await createWebhookThroughApi(api, {
      tools: ['countedStep', 'generateDocument'],
      approvalRules: { countedStep: 'allow', generateDocument: 'ask' },
    });
    const post = (label: string) => postSignedEvent(base, webhook, { eventType: 'step', externalId: label, data: { label } });

    // "mid-run": countedStep runs, then the model takes its time; the server dies while it thinks.
    // "staged": generateDocument waits for approval when the server dies.
    let restarted = false;
    model.script((request) => {
      const seen = toolResults(request);
      if (isFor('mid-run')(request)) {
        if (seen.length === 0) return { toolCalls: [{ name: 'countedStep', arguments: { label: 'mid-run' } }] };
        return restarted
          ? { text: `finished after ${JSON.stringify(seen[0]!.content)}` }
          : { text: 'never delivered', delayMs: 60_000 };
      }
      return seen.length === 0
        ? { toolCalls: [{ name: 'generateDocument', arguments: { title: 'Staged', content: 'body' } }] }
        : { text: 'document made' };
    });
    const midRun = await post('mid-run');
    const staged = await post('staged');
    await eventually('the model to be thinking after the tool ran', async () =>
      model.requests.some((r) => isFor('mid-run')(r) && toolResults(r).length > 0) ? true : undefined,
    );
    await eventually('the staged call', async () =>
      (await api('GET', `/orgs/acme/ledger/${staged}`)).status === 'pending_approval' ? true : undefined,
    );
    expect(readFileSync(countLog, 'utf8').trim().split('\n')).toHaveLength(1);

    await killServerProcess(server);
    restarted = true;
    server = await startServerProcess(environment.env, port);
    api = await apiClient(base, credentials);

    const finished = await eventually('the interrupted action to finish', async () => {
      const row = await api('GET', `/orgs/acme/ledger/${midRun}`);
      return ['completed', 'failed'].includes(row.status) ? row : undefined;
    });
    expect(finished.status).toBe('completed');
    expect(finished.execution.result.text).toBe('finished after {"recorded":"mid-run"}');
    expect(readFileSync(countLog, 'utf8').trim().split('\n')).toHaveLength(1); // not run again

    const [pending] = (await api('GET', '/orgs/acme/approvals')).approvals;
    expect(pending).toMatchObject({ actionId: staged, toolName: 'generateDocument' });
    expect((await api('POST', `/orgs/acme/actions/${staged}/tool-calls/${pending.toolCallId}/approve`)).status).toBe('approved');
    const done = await eventually('the approved action to finish', async () => {
      const row = await api('GET', `/orgs/acme/ledger/${staged}`);
      return ['completed', 'failed'].includes(row.status) ? row : undefined;
    });
    expect(done.status).toBe('completed');
    expect(done.execution.result.text).toBe('document made');
  }, 120_000);
});
