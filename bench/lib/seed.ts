import { loadConfig } from '../../server/src/config.ts';
import { createContainer } from '../../server/src/container.ts';
import { webhookInput } from '../../server/src/features/webhooks/webhooks.schemas.ts';
import { actionRuleInput, agentInput } from '../../server/src/features/agents/agents.schemas.ts';

export interface SeededWebhook {
  path: string;
  secret: string;
}

/**
 * Orgs, each with an admin member, an agent, a rule and webhooks, written through the services into
 * the database the benchmarked server will open (before it starts: PGlite allows one process).
 */
export async function seedWebhooks(
  env: Record<string, string>,
  options: { orgs: number; webhooksPerOrg: number; tool?: string; mcpServer?: { name: string; url: string } },
): Promise<SeededWebhook[]> {
  const container = await createContainer(loadConfig({ ...env, LOG_LEVEL: 'warn' }));
  try {
    await container.database.migrate();
    const { orgs, users, agents, webhooks } = container.services;
    const seeded: SeededWebhook[] = [];
    for (let o = 0; o < options.orgs; o++) {
      const org = await orgs.create(`bench-${o}`, `Bench ${o}`);
      const admin = await users.create({ email: `admin-${o}@bench.example`, role: 'Admin', provider: 'credentials' });
      await orgs.addMember(org.slug, admin.email);
      if (options.mcpServer) {
        await container.services.mcpServers.create(org.id, { ...options.mcpServer, headers: {}, auth: null });
      }
      const agent = await agents.createAgent(
        org.id,
        agentInput.parse({ name: 'Bench agent', instructions: 'Do it.', tools: [options.tool ?? 'generateDocument'] }),
        admin.id,
      );
      const rule = await agents.createRule(
        org.id,
        actionRuleInput.parse({
          name: 'Bench rule',
          agentId: agent.id,
          approvalRules: { [options.tool ?? 'generateDocument']: 'allow' },
        }),
      );
      for (let w = 0; w < options.webhooksPerOrg; w++) {
        const created = await webhooks.create(
          org,
          webhookInput.parse({ name: `hook ${w}`, actionRuleId: rule.id, runAsUserId: admin.id, rateLimitPerMinute: 1000 }),
        );
        seeded.push({ path: new URL(created.url).pathname, secret: created.secret });
      }
    }
    return seeded;
  } finally {
    await container.close();
  }
}

/** A session of the seeded admin of org `bench-<org>` (its bearer token), for benchmarks that call the API. */
export async function seedSession(env: Record<string, string>, org = 0): Promise<string> {
  const container = await createContainer(loadConfig({ ...env, LOG_LEVEL: 'warn' }));
  try {
    const admin = await container.services.users.findByEmail(`admin-${org}@bench.example`);
    if (!admin) throw new Error(`seedWebhooks made no admin for org ${org}`);
    return (await container.services.sessions.create(admin.id)).token;
  } finally {
    await container.close();
  }
}
