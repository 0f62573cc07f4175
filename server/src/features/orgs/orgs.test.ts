import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

describe('organizations', () => {
  it('lets a member read the org by slug or by ID', async () => {
    const { org, token } = await createTenant(app);
    for (const ref of [org.slug, org.id]) {
      const response = await app.request('GET', `/orgs/${ref}`, { token });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ id: org.id, slug: org.slug });
    }
    const list = await (await app.request('GET', '/orgs', { token })).json();
    expect(list.organizations.map((o: { id: string }) => o.id)).toEqual([org.id]);
  });

  it('answers 404 to a member of another tenant, the same as for an org that does not exist', async () => {
    const a = await createTenant(app);
    const b = await createTenant(app);
    for (const path of [`/orgs/${b.org.slug}`, `/orgs/${b.org.id}`, `/orgs/${b.org.slug}/members`]) {
      const crossTenant = await app.request('GET', path, { token: a.token });
      expect(crossTenant.status).toBe(404);
      const missing = await app.request('GET', path.replace(b.org.slug, 'no-such-org').replace(b.org.id, crypto.randomUUID()), {
        token: a.token,
      });
      expect(await crossTenant.json()).toEqual(await missing.json());
    }
  });

  it('lists members to Admin members only', async () => {
    const { org, admin, token } = await createTenant(app);
    const guest = await createUser(app, { org: org.slug });
    const members = await (await app.request('GET', `/orgs/${org.slug}/members`, { token })).json();
    expect(members.members.map((m: { id: string }) => m.id).sort()).toEqual([admin.id, guest.id].sort());
    expect(JSON.stringify(members)).not.toMatch(/passwordHash|\$2b\$/);
    expect((await app.request('GET', `/orgs/${org.slug}/members`, { token: await signIn(app, guest) })).status).toBe(403);
  });
});
