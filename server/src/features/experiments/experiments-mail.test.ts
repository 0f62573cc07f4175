import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { type FakeMailProvider, setUpEmailOrg, useAppWithMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { type ChatRequest, calledTools, eventData } from '../../../test/helpers/fake-model.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
useAppWithMailProvider({}, (started) => ({ app, model, provider } = started));

/** Answers the sender; "Sign as Ana." in the instructions signs the answer. */
function answer(request: ChatRequest) {
  if (calledTools(request)) return { text: 'Replied.' };
  const system = request.messages.find((message) => message.role === 'system')?.content ?? '';
  const body = `Thanks, we are on it.${system.includes('Sign as Ana.') ? '\n\nAna' : ''}`;
  return { toolCalls: [{ name: 'sendEmail', arguments: { to: eventData(request).from, subject: 'ignored in a thread', body } }] };
}

describe('experiments on answered email', () => {
  it('an email action keeps its version, and replays of it send nothing', async () => {
    model.script(answer);
    const org = await setUpEmailOrg(app, provider);
    const customer = `carol-${crypto.randomUUID().slice(0, 6)}@customer.test`;
    await org.deliver({ from: customer, to: [org.inbox.emailAddress], subject: 'Order', text: 'Where is it?' });
    const action = await eventually('the email action', async () => {
      const { rows } = await (await org.api('GET', '/ledger?kind=action')).json();
      return rows[0]?.status === 'completed' ? rows[0] : undefined;
    });
    expect(action).toMatchObject({ source: 'email', agentVersion: 1, agentLiveVersion: 1 });
    await waitForAction(app, org.auth, action.actionId, ['completed']);
    const sent = provider.sent.length;
    const { threads } = await (await org.api('GET', '/email/threads')).json();

    await org.api('POST', `/agents/${org.agentId}/versions`, { instructions: 'Answer customers.\nSign as Ana.' });
    const runs = [];
    for (const version of [2, 1]) {
      const { experiment } = await (
        await org.api('POST', `/agents/${org.agentId}/experiments`, { version, actionIds: [action.actionId] })
      ).json();
      runs.push(
        await eventually(`experiment of version ${version}`, async () => {
          const body = await (await org.api('GET', `/experiments/${experiment.id}`)).json();
          return body.experiment.state === 'completed' ? body : undefined;
        }),
      );
    }
    const [signed, same] = runs;
    expect(signed.results[0]).toMatchObject({
      outcome: 'changed',
      differences: [
        {
          kind: 'arguments_changed',
          toolName: 'sendEmail',
          changes: [{ path: '/body', from: 'Thanks, we are on it.', to: 'Thanks, we are on it.\n\nAna' }],
        },
      ],
      candidate: { toolCalls: [{ toolName: 'sendEmail', replayed: 'not_executed' }] },
    });
    // The live version's replay gets the recorded result of the same call: nothing is sent either.
    expect(same.results[0]).toMatchObject({ outcome: 'same', candidate: { toolCalls: [{ replayed: 'recorded' }] } });
    expect(provider.sent.length).toBe(sent);
    expect((await (await org.api('GET', '/email/threads')).json()).threads).toEqual(threads);
    expect((await (await org.api('GET', '/ledger?kind=action')).json()).rows).toHaveLength(1);
  });
});
