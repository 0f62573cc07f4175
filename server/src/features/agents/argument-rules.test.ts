import { describe, expect, it } from 'vitest';
import type { ArgumentRule } from '../../db/schema.ts';
import { argumentRuleSchema, atPointer, decisiveRule, ruleHolds, stricterMode } from './argument-rules.ts';

const rule = (op: ArgumentRule['op'], path: string, value?: unknown, mode: 'ask' | 'deny' = 'ask'): ArgumentRule => ({
  tool: 'orders__refund_order',
  path,
  op,
  value,
  mode,
});

describe('argument rules', () => {
  it('reads JSON Pointers, escapes included', () => {
    const doc = { a: { 'b/c': [10, { '~d': 'x' }] }, '': 1 };
    expect(atPointer(doc, '/a/b~1c/0')).toEqual({ found: true, value: 10 });
    expect(atPointer(doc, '/a/b~1c/1/~0d')).toEqual({ found: true, value: 'x' });
    expect(atPointer(doc, '/')).toEqual({ found: true, value: 1 });
    expect(atPointer(doc, '')).toEqual({ found: true, value: doc });
    expect(atPointer(doc, '/a/b~1c/2').found).toBe(false);
    expect(atPointer(doc, '/a/b~1c/01').found).toBe(false);
    expect(atPointer(doc, '/a/toString').found).toBe(false);
  });

  it('judges each operator, numbers as numbers (numeric strings too) and a missing path as no match', () => {
    const input = { amount: 150, currency: 'EUR', note: 'VIP-42 refund', tags: ['a'], sku: '120' };
    const holds: Array<[ArgumentRule, boolean]> = [
      [rule('gt', '/amount', 100), true],
      [rule('gt', '/amount', 150), false],
      [rule('gte', '/amount', 150), true],
      [rule('lt', '/amount', 100), false],
      [rule('lte', '/sku', 120), true],
      [rule('gt', '/currency', 100), false],
      [rule('gt', '/missing', 0), false],
      [rule('eq', '/currency', 'EUR'), true],
      [rule('ne', '/currency', 'EUR'), false],
      [rule('eq', '/tags', ['a']), true],
      [rule('in', '/currency', ['USD', 'EUR']), true],
      [rule('in', '/currency', ['USD']), false],
      [rule('matches', '/note', '^VIP-[0-9]+'), true],
      [rule('matches', '/amount', '^1[0-9]{2}$'), true],
      [rule('matches', '/tags', 'a'), false],
      [rule('exists', '/note'), true],
      [rule('exists', '/nope'), false],
      [rule('exists', '/nope', false), true],
      [rule('gt', '/currency', 'ABC'), true],
    ];
    for (const [candidate, expected] of holds) expect(ruleHolds(candidate, input), JSON.stringify(candidate)).toBe(expected);
  });

  it('takes the strictest rule that holds; the stricter of it and the tool mode applies', () => {
    const rules = [
      rule('gt', '/amount', 100, 'ask'),
      rule('gt', '/amount', 1000, 'deny'),
      { ...rule('gt', '/amount', 0, 'deny'), tool: 'other' },
    ];
    expect(decisiveRule(rules, 'orders__refund_order', { amount: 50 })).toBeUndefined();
    expect(decisiveRule(rules, 'orders__refund_order', { amount: 500 })).toMatchObject({ index: 0 });
    expect(decisiveRule(rules, 'orders__refund_order', { amount: 5000 })).toMatchObject({ index: 1, rule: { mode: 'deny' } });
    expect(stricterMode('allow', 'ask')).toBe('ask');
    expect(stricterMode('agent', 'ask')).toBe('ask');
    expect(stricterMode('ask', 'agent')).toBe('ask');
    expect(stricterMode('deny', 'ask')).toBe('deny');
  });

  it('runs a pattern in linear time, whatever the input', () => {
    // Nested quantifiers are refused when saved; RE2's engine is linear even for what a backtracking one would not finish.
    expect(ruleHolds(rule('matches', '/s', '^(a|aa)*c$'), { s: `${'a'.repeat(100_000)}!` })).toBe(false);
  });

  it('is checked when saved: pointer, operator and value, and patterns that would backtrack or are not RE2', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...rule('gt', 'amount', 1) }, /JSON Pointer/],
      [{ ...rule('gt', '/a~2', 1) }, /JSON Pointer/],
      [{ ...rule('gt', '/a', true) }, /number or a string/],
      [{ ...rule('eq', '/a') }, /needs a value/],
      [{ ...rule('in', '/a', 'x') }, /list/],
      [{ ...rule('exists', '/a', 'yes') }, /true or false/],
      [{ ...rule('matches', '/a', '(a+)+$') }, /would backtrack/],
      [{ ...rule('matches', '/a', '(x+x+)+y') }, /would backtrack/],
      [{ ...rule('matches', '/a', '(a)\\1') }, /not a regular expression this service runs/],
      [{ ...rule('matches', '/a', 'a'.repeat(201)) }, /at most 200/],
      [{ ...rule('matches', '/a', 5) }, /needs a regular expression/],
      [{ ...rule('eq', '/a', 'x'.repeat(20_000)) }, /at most 10000 bytes/],
      [{ ...rule('eq', '/a', 1), mode: 'allow' }, /ask|deny|Invalid option/],
      [{ ...rule('eq', '/a', 1), op: 'like' }, /Invalid option/],
    ];
    for (const [input, message] of bad) {
      const parsed = argumentRuleSchema.safeParse(input);
      expect(parsed.success, JSON.stringify(input)).toBe(false);
      expect(parsed.error!.issues.map((issue) => issue.message).join('; ')).toMatch(message);
    }
    expect(argumentRuleSchema.safeParse(rule('matches', '/note', '^VIP-[0-9]+$')).success).toBe(true);
  });
});
