import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The features form a layered graph: none imports another back, directly or around a loop. A cycle
 * means two features share something that belongs in lib/, or one reads the other's internals.
 * Tests may reach across (they drive the whole app); production files may not loop.
 */
const FEATURES = join(import.meta.dirname, '../src/features');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const featureOf = (file: string) => {
  const inside = relative(FEATURES, file);
  return inside.startsWith('..') ? undefined : inside.split(sep)[0];
};

/** feature -> the features it imports, each with one file that shows it. */
function featureGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sourceFiles(FEATURES)) {
    const from = featureOf(file)!;
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const to = featureOf(resolve(dirname(file), match[1] ?? match[2]!));
      if (to && to !== from && !edges.has(to)) edges.set(to, relative(FEATURES, file));
    }
  }
  return graph;
}

/** Every cycle's features, found by depth-first search (each reported once, from its first member). */
function cycles(graph: Map<string, Map<string, string>>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

describe('features', () => {
  it('import one another without a cycle', () => {
    const graph = featureGraph();
    const loops = cycles(graph).map((loop) =>
      loop
        .slice(1)
        .map((to, index) => `${loop[index]} -> ${to} (${graph.get(loop[index]!)!.get(to)})`)
        .join(', '),
    );
    expect(loops).toEqual([]);
  });

  it("reach email through its interfaces: approvals send with ThreadMail and are called back through InboundReplyHook, never email's repositories", () => {
    const reached = new Set<string>();
    for (const file of sourceFiles(join(FEATURES, 'approvals'))) {
      for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
        const target = resolve(dirname(file), match[1] ?? match[2]!);
        if (featureOf(target) === 'email') reached.add(relative(FEATURES, target));
      }
    }
    expect([...reached].sort()).toEqual(['email/email-content.ts', 'email/inbound.service.ts', 'email/thread-mail.ts']);
    // And the composition root binds nothing late to break a loop between them.
    expect(readFileSync(join(import.meta.dirname, '../src/container.ts'), 'utf8')).not.toMatch(/let approvals|approvals!/);
  });

  it('keep decisions in the approvals feature: its channels only translate, and nothing else writes a decision', () => {
    // The routes, the email and the Slack channels reach the decision through the approvals service, never the records or the actions.
    const channels = [
      join(FEATURES, 'approvals/approvals.routes.ts'),
      ...sourceFiles(join(FEATURES, 'approvals/email')),
      ...sourceFiles(join(FEATURES, 'approvals/slack')),
    ];
    const writes = /(approvals\.repo|decision-steps|actions\/(tool-calls\.repo|action-writes|actions\.repo))\.ts$/;
    const reachedByChannels = channels.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(IMPORT)]
        .map((match) => resolve(dirname(file), match[1] ?? match[2]!))
        .filter((target) => writes.test(target))
        .map((target) => `${relative(FEATURES, file)} -> ${relative(FEATURES, target)}`),
    );
    expect(reachedByChannels).toEqual([]);
    // Outside the feature, only the ledger reads its records (and it writes none).
    const outside = sourceFiles(FEATURES).filter((file) => !['approvals', 'ledger'].includes(featureOf(file)!));
    const readers = outside.filter((file) => /approvals\.repo\.ts|decision-steps\.ts/.test(readFileSync(file, 'utf8')));
    expect(readers.map((file) => relative(FEATURES, file))).toEqual([]);
  });

  it("leave budgets to their one owner: the budgets service writes and invalidates the org's and the agents' budgets", () => {
    const source = (path: string) => readFileSync(join(import.meta.dirname, '../src', path), 'utf8');
    // Agents hand an agent's budget to the budgets service, which writes it with the agent: their repository writes none.
    expect(source('features/agents/agents.repo.ts')).not.toMatch(/budget\s*:/);
    expect(source('features/agents/agents.service.ts')).not.toMatch(/budgetChanged/);
    // The agents' composition is given the budgets; it builds no service of the usage feature.
    expect(source('composition/agents.ts')).not.toMatch(/create(Budgets|Usage)Service/);
  });

  it('finds a cycle when there is one', () => {
    const graph = new Map([
      ['a', new Map([['b', 'a/x.ts']])],
      ['b', new Map([['c', 'b/y.ts']])],
      ['c', new Map([['a', 'c/z.ts']])],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c', 'a']]);
  });
});
