import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers/eventually.ts';
import { type ChatRequest, startFakeModel, toolResults } from '../../../test/helpers/fake-model.ts';
import { freePort } from '../../../test/helpers/http.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import {
  apiClient,
  createWebhookThroughApi,
  killServerProcess,
  postSignedEvent,
  serverProcessEnvironment,
  startServerProcess,
} from '../../../test/helpers/server-process.ts';

let model: Awaited<ReturnType<typeof startFakeModel>>;
let orders: TestMcpServer;
let environment: Awaited<ReturnType<typeof serverProcessEnvironment>>;
beforeAll(async () => {
  model = await startFakeModel();
  orders = await startTestMcpServer();
  environment = await serverProcessEnvironment({ ...model.env, MCP_ALLOW_PRIVATE_NETWORKS: 'true', ACTION_LEASE_SECONDS: '1' });
});
afterAll(async () => {
  await environment?.cleanup();
  await orders?.close();
  await model?.close();
});

const labelOf = (request: ChatRequest) =>
  /"label": "([^"]+)"/.exec(request.messages.find((m) => m.role === 'user')?.content ?? '')?.[1];

describe('an MCP call across a SIGKILL between its request and its result', () => {
  it('is never repeated blindly: a destructive call waits for a human (reject goes on with an error, approve runs it again); a read-only one is called again', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let server = await startServerProcess(environment.env, port);
    let api = await apiClient(base, environment.createAdmin());
    expect((await api('POST', '/orgs/acme/mcp-servers', { name: 'orders', url: orders.url })).name).toBe('orders');
    const webhook = await createWebhookThroughApi(api, {
      tools: ['orders__refund_order', 'orders__lookup_order'],
      approvalRules: { orders__refund_order: 'allow', orders__lookup_order: 'allow' },
    });
    model.script((request) => {
      const label = labelOf(request)!;
      const seen = toolResults(request);
      if (seen.length > 0) return { text: `${label}: ${JSON.stringify(seen[0]!.content)}` };
      return label.startsWith('lookup')
        ? { toolCalls: [{ name: 'orders__lookup_order', arguments: { orderId: label } }] }
        : { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId: label, amount: 10 } }] };
    });
    const post = (label: string) => postSignedEvent(base, webhook, { eventType: 'order', externalId: label, data: { label } });
    const effects = (orderId: string) => orders.sideEffects.filter((effect) => effect.arguments.orderId === orderId);

    // Each call reaches the server and does its side effect; the answer is held until the service is dead.
    const release = orders.holdCalls({ afterEffect: true });
    const ids = { rejected: await post('refund-1'), approved: await post('refund-2'), lookup: await post('lookup-1') };
    await eventually('the three calls to have done their side effects', () =>
      ['refund-1', 'refund-2', 'lookup-1'].every((label) => effects(label).length === 1) ? true : undefined,
    );
    await killServerProcess(server);
    release();
    server = await startServerProcess(environment.env, port);
    api = await apiClient(base, { email: 'ops@acme.example', password: 'a long password' });

    const settled = (id: string, states: string[]) =>
      eventually(`${id} in ${states.join('/')}`, async () => {
        const row = await api('GET', `/orgs/acme/ledger/${id}`);
        return states.includes(row.status) ? row : undefined;
      });
    // The read-only call was simply called again.
    const lookup = await settled(ids.lookup, ['completed', 'failed']);
    expect(lookup.status).toBe('completed');
    expect(effects('lookup-1')).toHaveLength(2);

    // The refunds wait for a human, with the reason; nothing was done twice.
    for (const id of [ids.rejected, ids.approved]) {
      const row = await settled(id, ['pending_approval', 'completed', 'failed']);
      expect(row.status).toBe('pending_approval');
      expect(row.execution.toolCalls[0]).toMatchObject({
        status: 'staged',
        approval: 'pending',
        mode: 'allow',
        stagedReason: 'interrupted: the server may or may not have done it',
        startedAt: expect.any(String),
      });
    }
    expect(effects('refund-1')).toHaveLength(1);
    expect(effects('refund-2')).toHaveLength(1);
    const { approvals } = await api('GET', '/orgs/acme/approvals');
    expect(approvals.map((approval: { stagedReason: string }) => approval.stagedReason)).toEqual([
      'interrupted: the server may or may not have done it',
      'interrupted: the server may or may not have done it',
    ]);
    const callOf = (id: string) => approvals.find((approval: { actionId: string }) => approval.actionId === id).toolCallId;

    // Rejected: not run again; the run goes on with an error as the call's result.
    const rejected = await api('POST', `/orgs/acme/actions/${ids.rejected}/tool-calls/${callOf(ids.rejected)}/reject`, {
      reason: 'refunded by hand',
    });
    expect(rejected.status).toBe('rejected');
    const goneOn = await settled(ids.rejected, ['completed', 'failed', 'rejected']);
    expect(goneOn.status).toBe('completed');
    expect(goneOn.execution.result.text).toMatch(/refund-1: .*interrupted.*chose not to run it again: refunded by hand/);
    expect(effects('refund-1')).toHaveLength(1);

    // Approved: run again, as the operator chose.
    await api('POST', `/orgs/acme/actions/${ids.approved}/tool-calls/${callOf(ids.approved)}/approve`);
    const again = await settled(ids.approved, ['completed', 'failed']);
    expect(again.status).toBe('completed');
    expect(again.execution.result.text).toBe('refund-2: "Refunded 10 on order refund-2"');
    expect(effects('refund-2')).toHaveLength(2);
  }, 120_000);
});
