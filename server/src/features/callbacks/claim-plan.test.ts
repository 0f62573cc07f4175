import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createTestDatabaseUrl } from '../../../test/helpers/test-database.ts';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Alias?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/**
 * The plan PostgreSQL runs the claim with, read with auto_explain (PostgreSQL's own module, loaded for
 * this connection): PGlite has no such module, and this is a PostgreSQL test.
 */
describe.runIf(process.env.TEST_DB === 'postgres')("the dispatcher's claim, planned on an empty table", () => {
  it("checks each due callback's order with one probe of its index, not a walk of every pending callback", async () => {
    // A new database, as a new deployment's: no callback yet, and no statistics.
    const { url, drop } = await createTestDatabaseUrl({ template: inject('postgresTemplateDatabase') });
    const client = new pg.Client({ connectionString: url });
    const plans: PlanNode[] = [];
    client.on('notice', (notice) => {
      const json = notice.message?.slice(notice.message.indexOf('{'));
      if (notice.message?.includes('plan:') && json) plans.push((JSON.parse(json) as { Plan: PlanNode }).Plan);
    });
    try {
      await client.connect();
      await client.query(`load 'auto_explain'`);
      for (const setting of [
        'auto_explain.log_min_duration = 0',
        'auto_explain.log_nested_statements = on',
        'auto_explain.log_format = json',
        'auto_explain.log_level = notice',
        // The plan a connection keeps after its first runs, made now on the empty table.
        'plan_cache_mode = force_generic_plan',
      ])
        await client.query(`set ${setting}`);
      await client.query(`select * from claim_due_callbacks(10, 1000, '{}'::uuid[])`);

      const claim = plans.map(nodesOf).find((nodes) => nodes.some((node) => node['Node Type'] === 'LockRows'));
      const orderCheck = claim?.filter((node) => node.Alias === 'e');
      expect(orderCheck).toEqual([
        expect.objectContaining({
          'Node Type': 'Index Scan',
          'Relation Name': 'callback_deliveries',
          'Index Name': 'callback_deliveries_order_idx',
          'Index Cond': expect.stringMatching(/action_id = .*endpoint_id = .*seq < /),
        }),
      ]);
    } finally {
      await client.end();
      await drop();
    }
  });
});
