import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';
import { up } from './0032_blank_model_names.ts';

let app: TestApp;
let model: FakeModel;
useAppWithModel({}, (started) => {
  ({ app, model } = started);
});

describe('migration 0032: model names as the API takes them', () => {
  it("makes a version stored with a blank model run on the server's model, and trims a name", async () => {
    const blank = await setupWebhook(app);
    const spaced = await setupWebhook(app);
    const named = await setupWebhook(app);
    // What the API stored before it refused a blank name and trimmed the others.
    const store = (agentId: string, name: string) =>
      sql`update agent_versions set model = ${name} where agent_id = ${agentId}`.execute(app.container.database.db);
    await store(blank.agentId, ' \t');
    await store(spaced.agentId, '  scripted-model\n');
    await store(named.agentId, 'other model');

    // As the migrator runs it: on the database before its schema is known.
    await up(app.container.database.db as unknown as Kysely<unknown>);

    const modelOf = async (made: typeof blank) =>
      (
        await (
          await app.request('GET', `/orgs/${made.tenant.org.slug}/agents/${made.agentId}`, { token: made.tenant.token })
        ).json()
      ).model;
    expect(await modelOf(blank)).toBeNull();
    expect(await modelOf(spaced)).toBe('scripted-model');
    expect(await modelOf(named)).toBe('other model');
    // The blank one named no model, and its actions failed with "no model"; now they run on MODEL_NAME's.
    for (const made of [blank, spaced]) {
      const actionId = await runEvent(app, made);
      expect(await waitForAction(app, auth(made), actionId, ['completed', 'failed'])).toMatchObject({ status: 'completed' });
    }
    expect(model.requests.map((request) => request.model)).toEqual(Array(model.requests.length).fill('scripted-model'));
  });
});
