import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { calledTools, documentThenText, toolResults } from '../../../test/helpers/fake-model.ts';
import { auth, runEvent as postAndRun } from '../../../test/helpers/callbacks.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
useAppWithModel({ MODEL_TIMEOUT_SECONDS: '3', MODEL_MAX_RETRIES: '1', ACTION_MAX_STEPS: '4' }, (started) => {
  ({ app, model } = started);
});
const runEvent = (setup: WebhookSetup, payload: Record<string, unknown> = {}) =>
  postAndRun(app, setup, { data: { orderId: 42 }, ...payload });

describe('running an action', () => {
  it("runs an allowed tool, then completes with the model's answer; every step is in the thread and the ledger", async () => {
    const setup = await setupWebhook(app);
    model.script(documentThenText());
    const actionId = await runEvent(setup, { instructions: 'Write the order up.' });
    const row = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(row.status).toBe('completed');
    expect(row.execution.result.text).toMatch(/^Made \{"documentId":"[0-9a-f-]{36}"\}$/);
    expect(row.lifecycleEvents.map((event: { status: string }) => event.status)).toEqual(['queued', 'running', 'completed']);
    expect(row.execution.toolCalls).toEqual([
      expect.objectContaining({ toolName: 'generateDocument', mode: 'allow', status: 'completed', approval: 'not_required' }),
    ]);

    // The prompt: agent and rule instructions as instructions, the payload's instructions and the event as the first message.
    const first = model.requests.at(-2)!;
    expect(first.messages[0]).toEqual({ role: 'system', content: 'Help.' });
    expect(first.messages[1]!.content).toContain('Write the order up.');
    expect(first.messages[1]!.content).toContain('"orderId": 42');
    expect(first.tools!.map((tool) => tool.function.name)).toEqual(['generateDocument']);

    const threads = await (await app.request('GET', '/api/threads', { token: setup.tenant.token })).json();
    expect(threads.threads).toEqual([expect.objectContaining({ id: row.execution.threadId, channel: 'webhook' })]);
    const messages = await (
      await app.request('GET', `/api/threads/${row.execution.threadId}/messages`, { token: setup.tenant.token })
    ).json();
    expect(messages.messages.map((message: { role: string }) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    // The ledger row shows the same run to the org's admins, whoever it ran as.
    expect(row.execution.conversation.map((message: { role: string }) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(row.execution.conversation.map((message: { content: unknown }) => message.content)).toEqual(
      messages.messages.map((message: { content: unknown }) => message.content),
    );
    const paged = await (
      await app.request('GET', `/api/threads/${row.execution.threadId}/messages?limit=3`, { token: setup.tenant.token })
    ).json();
    expect(paged.messages).toHaveLength(3);
    const rest = await (
      await app.request('GET', `/api/threads/${row.execution.threadId}/messages?cursor=${paged.nextCursor}`, {
        token: setup.tenant.token,
      })
    ).json();
    expect(rest).toMatchObject({ messages: [{ role: 'assistant', seq: 3 }], nextCursor: null });
    for (const [query, status] of [
      ['?cursor=abc', 400],
      ['?limit=0', 400],
    ] as const) {
      expect(
        (await app.request('GET', `/api/threads/${row.execution.threadId}/messages${query}`, { token: setup.tenant.token }))
          .status,
      ).toBe(status);
    }
    expect((await app.request('GET', `/api/threads/${randomUUID()}/messages`, { token: setup.tenant.token })).status).toBe(404);
    expect((await app.request('GET', `/api/threads/${row.execution.threadId}/messages`)).status).toBe(401);
    const documents = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/documents`, { token: setup.tenant.token })
    ).json();
    // The document names the action that wrote it, and that action's agent.
    expect(documents.documents).toEqual([expect.objectContaining({ actionId, agentName: 'Helper' })]);
  });
});

describe('failures and limits', () => {
  const failedWith = async (setup: WebhookSetup, actionId: string) => {
    const row = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(row.status).toBe('failed');
    expect(row.lifecycleEvents.at(-1)).toMatchObject({ status: 'failed', cause: row.execution.error });
    return row.execution.error as string;
  };

  it("a model error fails the action with its message (after the SDK's retries for a 5xx)", async () => {
    const setup = await setupWebhook(app);
    model.script(() => ({ error: { status: 500, message: 'the GPU caught fire' } }));
    const before = model.requests.length;
    expect(await failedWith(setup, await runEvent(setup))).toMatch(/^The model call failed: .*the GPU caught fire/);
    expect(model.requests.length - before).toBe(2); // MODEL_MAX_RETRIES=1

    model.script(() => ({ error: { status: 400, message: 'context length exceeded' } }));
    const again = model.requests.length;
    expect(await failedWith(setup, await runEvent(setup))).toMatch(/context length exceeded/);
    expect(model.requests.length - again).toBe(1);
  });

  it('a model slower than MODEL_TIMEOUT_SECONDS fails the action with that reason', async () => {
    const setup = await setupWebhook(app);
    model.script(() => ({ text: 'too late', delayMs: 3500 }));
    expect(await failedWith(setup, await runEvent(setup))).toBe('The model did not answer within 3 s');
  });

  it('reaching ACTION_MAX_STEPS fails the action with that reason', async () => {
    const setup = await setupWebhook(app);
    model.script(() => ({ toolCalls: [{ name: 'generateDocument', arguments: { title: 'Again', content: 'and again' } }] }));
    const row = await waitForAction(app, auth(setup), await runEvent(setup), ['failed']);
    expect(row.execution.error).toBe('The action reached its limit of 4 model steps');
    expect(row.execution.toolCalls).toHaveLength(4);
  });

  it('an agent without a usable model fails with a clear message, not a hang', async () => {
    const setup = await setupWebhook(app);
    await app.request('PATCH', `/orgs/${setup.tenant.org.slug}/agents/${setup.agentId}`, {
      token: setup.tenant.token,
      body: { provider: 'anthropic', model: 'claude-x' },
    });
    expect(await failedWith(setup, await runEvent(setup))).toBe(
      'No API key for the anthropic provider: store one for the organization, or set MODEL_API_KEY',
    );
  });

  it('bad tool arguments and a throwing tool go back to the model as errors; the run goes on', async () => {
    const setup = await setupWebhook(app);
    model.script((request) =>
      calledTools(request)
        ? {
            text: `saw: ${toolResults(request)
              .map((result) => result.content)
              .join(' | ')}`,
          }
        : {
            toolCalls: [
              { name: 'generateDocument', arguments: { title: '' } },
              { name: 'generateDocument', arguments: '{not json' },
              { name: 'noSuchTool', arguments: {} },
            ],
          },
    );
    const row = await waitForAction(app, auth(setup), await runEvent(setup), ['completed', 'failed']);
    expect(row.status).toBe('completed');
    expect(row.execution.result.text).toContain('Invalid input for generateDocument: title:');
    expect(row.execution.result.text).toContain('There is no tool named "noSuchTool" available to you.');
    expect(row.execution.toolCalls.map((call: { status: string }) => call.status)).toEqual(['failed', 'failed', 'failed']);
  });

  it('a model that gives its calls ids used already (each step numbered from 0 again) has each call stored and answered apart', async () => {
    const setup = await setupWebhook(app);
    const document = (title: string) => ({ name: 'generateDocument', arguments: { title, content: `# ${title}` }, id: 'call_0' });
    model.script((request) => {
      const seen = toolResults(request).length;
      if (seen === 0) return { toolCalls: [document('First')] };
      if (seen === 1) return { toolCalls: [document('Second'), document('Third')] };
      return { text: 'Done.' };
    });
    const row = await waitForAction(app, auth(setup), await runEvent(setup), ['completed', 'failed']);
    expect(row.status).toBe('completed');
    const calls = row.execution.toolCalls as Array<{ toolCallId: string; status: string; input: { title: string } }>;
    const byTitle = new Map(calls.map((call) => [call.input.title, call]));
    expect([...byTitle.keys()].sort()).toEqual(['First', 'Second', 'Third']);
    expect(calls.every((call) => call.status === 'completed')).toBe(true);
    // The provider's id is kept while it is new in the conversation; the repeats get ids of their own.
    expect(byTitle.get('First')!.toolCallId).toBe('call_0');
    expect(new Set(calls.map((call) => call.toolCallId)).size).toBe(3);
    // The model saw each result under the id of its own call, in the order it proposed them.
    const last = model.requests.at(-1)!;
    const proposed = last.messages.flatMap((message) => message.tool_calls ?? []).map((call) => call.id);
    expect(proposed).toEqual(['First', 'Second', 'Third'].map((title) => byTitle.get(title)!.toolCallId));
    expect(toolResults(last).map((result) => result.toolCallId)).toEqual(proposed);
    const documents = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/documents`, { token: setup.tenant.token })
    ).json();
    expect(documents.documents.map((made: { title: string }) => made.title).sort()).toEqual(['First', 'Second', 'Third']);
  });

  it('a call the model gives an empty id gets an id (the provider client makes one up, else the service), paired with its result', async () => {
    const setup = await setupWebhook(app);
    model.script((request) =>
      calledTools(request)
        ? { text: 'Done.' }
        : { toolCalls: [{ name: 'generateDocument', arguments: { title: 'Nameless', content: '# Nameless' }, id: '' }] },
    );
    const row = await waitForAction(app, auth(setup), await runEvent(setup), ['completed', 'failed']);
    expect(row.status).toBe('completed');
    const [call] = row.execution.toolCalls;
    expect(call).toMatchObject({ status: 'completed', toolCallId: expect.stringMatching(/^\S+$/) });
    expect(toolResults(model.requests.at(-1)!).map((result) => result.toolCallId)).toEqual([call.toolCallId]);
  });
});

describe('modes from rule, override and preference', () => {
  it('a per-request override counts only when the webhook allows overrides', async () => {
    for (const allowRequestOverrides of [true, false]) {
      const setup = await setupWebhook(app, { allowRequestOverrides });
      model.script(documentThenText());
      const actionId = await runEvent(setup, {
        toolApprovals: { generateDocument: 'ask', unknownTool: 'allow', sendFax: 'sometimes' },
      });
      const row = await waitForAction(app, auth(setup), actionId, ['completed', 'pending_approval', 'failed']);
      expect(row.status).toBe(allowRequestOverrides ? 'pending_approval' : 'completed');
    }
  });

  it('"always deny" beats an allow rule: the tool does not run and the model is told', async () => {
    const setup = await setupWebhook(app);
    const put = await app.request('PUT', '/api/me/tool-preferences/generateDocument', {
      token: setup.tenant.token,
      body: { preference: 'always_deny' },
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({ toolName: 'generateDocument', preference: 'always_deny' });
    model.script(documentThenText());
    const row = await waitForAction(app, auth(setup), await runEvent(setup), ['completed', 'failed']);
    expect(row.status).toBe('completed');
    expect(row.execution.toolCalls[0]).toMatchObject({ mode: 'deny', status: 'denied' });
    expect(model.requests.at(-1)!.messages.find((message) => message.role === 'tool')!.content).toContain('always deny');

    const listed = await (await app.request('GET', '/api/me/tool-preferences', { token: setup.tenant.token })).json();
    expect(listed.preferences).toEqual([expect.objectContaining({ toolName: 'generateDocument', preference: 'always_deny' })]);
    await app.request('PUT', '/api/me/tool-preferences/generateDocument', {
      token: setup.tenant.token,
      body: { preference: 'default' },
    });
    expect(
      (await (await app.request('GET', '/api/me/tool-preferences', { token: setup.tenant.token })).json()).preferences,
    ).toEqual([]);
  });

  it('tool preferences: 404 for an unknown tool, 400 for a bad preference, 401 without a session', async () => {
    const setup = await setupWebhook(app);
    expect(
      (
        await app.request('PUT', '/api/me/tool-preferences/launchMissiles', {
          token: setup.tenant.token,
          body: { preference: 'always_deny' },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await app.request('PUT', '/api/me/tool-preferences/generateDocument', {
          token: setup.tenant.token,
          body: { preference: 'never' },
        })
      ).status,
    ).toBe(400);
    expect(
      (await app.request('PUT', '/api/me/tool-preferences/generateDocument', { body: { preference: 'always_deny' } })).status,
    ).toBe(401);
  });
});

describe('org model keys', () => {
  it("stores an org's key encrypted, shows only a hint, and uses it instead of the server's", async () => {
    const setup = await setupWebhook(app);
    const base = `/orgs/${setup.tenant.org.slug}/model-credentials`;
    const put = await app.request('PUT', `${base}/openai-compatible`, {
      token: setup.tenant.token,
      body: { apiKey: 'sk-org-key-that-is-wrong-1234' },
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({
      provider: 'openai-compatible',
      apiKeyHint: '...1234',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const stored = await app.container.db
      .selectFrom('orgModelCredentials')
      .selectAll()
      .where('orgId', '=', setup.tenant.org.id)
      .executeTakeFirstOrThrow();
    expect(stored.apiKeyEncrypted).not.toContain('sk-org-key');
    expect(JSON.stringify(await (await app.request('GET', base, { token: setup.tenant.token })).json())).not.toContain(
      'sk-org-key',
    );

    // The loopback provider accepts only its own key: the org's wrong one shows.
    model.script(() => ({ text: 'hello' }));
    const row = await waitForAction(app, auth(setup), await runEvent(setup), ['completed', 'failed']);
    expect(row.execution.error).toMatch(/Incorrect API key provided/);

    expect((await app.request('DELETE', `${base}/openai-compatible`, { token: setup.tenant.token })).status).toBe(204);
    expect((await waitForAction(app, auth(setup), await runEvent(setup), ['completed', 'failed'])).status).toBe('completed');
  });

  it('answers 400 for a bad provider or key, 404 for a key not stored, and hides keys from other tenants', async () => {
    const setup = await setupWebhook(app);
    const other = await setupWebhook(app);
    const base = `/orgs/${setup.tenant.org.slug}/model-credentials`;
    expect(
      (await app.request('PUT', `${base}/skynet`, { token: setup.tenant.token, body: { apiKey: 'sk-123456789' } })).status,
    ).toBe(400);
    expect((await app.request('PUT', `${base}/openai`, { token: setup.tenant.token, body: { apiKey: 'short' } })).status).toBe(
      400,
    );
    expect((await app.request('DELETE', `${base}/anthropic`, { token: setup.tenant.token })).status).toBe(404);
    await app.request('PUT', `${base}/openai`, { token: setup.tenant.token, body: { apiKey: 'sk-123456789' } });
    expect((await app.request('GET', base, { token: other.tenant.token })).status).toBe(404);
    expect(
      (await app.request('PUT', `${base}/openai`, { token: other.tenant.token, body: { apiKey: 'sk-evil-123456' } })).status,
    ).toBe(404);
    expect(
      (await (await app.request('GET', `/orgs/${other.tenant.org.slug}/model-credentials`, { token: other.tenant.token })).json())
        .credentials,
    ).toEqual([]);
  });
});
