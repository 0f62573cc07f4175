import { isDeepStrictEqual } from 'node:util';
import { RE2JS } from 're2js';
import safeRegex from 'safe-regex2';
import { z } from 'zod';
import { type ActionSource, ARGUMENT_RULE_OPS, type ArgumentRule, type ToolCallMode } from '../../db/schema.ts';

/**
 * Rules on a call's arguments (an action rule's, an inbox assignment's). A rule whose tool is called and
 * whose condition holds makes the call at least as strict as its mode (`deny` > `ask` > `agent` >
 * `allow`). A condition that cannot be judged (the path is missing, a value of another type) does not
 * hold: the tool's own mode applies. Regular expressions run on RE2's engine (linear time, whatever the
 * input).
 */
const STRICTNESS: Record<ToolCallMode, number> = { allow: 0, agent: 1, ask: 2, deny: 3 };
export const stricterMode = (a: ToolCallMode, b: ToolCallMode): ToolCallMode => (STRICTNESS[a] >= STRICTNESS[b] ? a : b);

export const MAX_PATTERN_LENGTH = 200;
const MAX_VALUE_BYTES = 10_000;
const JSON_POINTER = /^(\/([^~/]|~[01])*)*$/;

export const argumentRuleSchema = z
  .object({
    tool: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a tool name'),
    path: z
      .string()
      .max(500)
      .regex(JSON_POINTER, 'a JSON Pointer into the arguments, such as /amount or /items/0/sku')
      .describe('JSON Pointer (RFC 6901)'),
    op: z.enum(ARGUMENT_RULE_OPS),
    value: z.unknown().optional(),
    mode: z.enum(['ask', 'deny']),
  })
  .superRefine((rule, context) => {
    const problem = valueProblem(rule as ArgumentRule);
    if (problem) context.addIssue({ code: 'custom', path: ['value'], message: problem });
  });

/** What is wrong with a rule's value for its operator, checked when the rule is saved. */
function valueProblem(rule: ArgumentRule): string | undefined {
  const { op, value } = rule;
  if (value !== undefined && JSON.stringify(value).length > MAX_VALUE_BYTES) return `at most ${MAX_VALUE_BYTES} bytes of JSON`;
  switch (op) {
    case 'eq':
    case 'ne':
      return value === undefined ? `${op} needs a value` : undefined;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return typeof value === 'number' || typeof value === 'string' ? undefined : `${op} compares with a number or a string`;
    case 'in':
      return Array.isArray(value) && value.length <= 100 ? undefined : 'in needs a list of at most 100 values';
    case 'exists':
      return value === undefined || typeof value === 'boolean' ? undefined : 'exists takes no value, or true or false';
    case 'matches':
      return patternProblem(value);
  }
}

/** A pattern is refused when it is long, not RE2 syntax, or would backtrack catastrophically in a backtracking engine. */
function patternProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0) return 'matches needs a regular expression';
  if (value.length > MAX_PATTERN_LENGTH) return `a regular expression of at most ${MAX_PATTERN_LENGTH} characters`;
  try {
    RE2JS.compile(value);
  } catch (error) {
    return `not a regular expression this service runs: ${(error as Error).message}`;
  }
  // RE2 never backtracks, but a pattern that would in other engines is refused all the same: rules are
  // read, copied and reused elsewhere. (safe-regex2 reads JavaScript syntax: RE2-only syntax such as (?i) is not judged.)
  if (parsesAsJavaScript(value) && !safeRegex(value)) {
    return 'this regular expression would backtrack (nested quantifiers such as (a+)+): write it without them';
  }
  return undefined;
}

function parsesAsJavaScript(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

const patterns = new Map<string, RE2JS>();
function pattern(source: string): RE2JS {
  let compiled = patterns.get(source);
  if (!compiled) {
    compiled = RE2JS.compile(source);
    if (patterns.size > 1000) patterns.clear();
    patterns.set(source, compiled);
  }
  return compiled;
}

/** The value a JSON Pointer (RFC 6901) points at in `document`, if it is there. */
export function atPointer(document: unknown, pointer: string): { found: boolean; value?: unknown } {
  if (pointer === '') return { found: true, value: document };
  let current = document;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(current) && /^(0|[1-9]\d*)$/.test(token) && Number(token) < current.length)
      current = current[Number(token)];
    else if (typeof current === 'object' && current !== null && !Array.isArray(current) && Object.hasOwn(current, token))
      current = (current as Record<string, unknown>)[token];
    else return { found: false };
  }
  return { found: true, value: current };
}

/** Numbers compare as numbers (a numeric string too, as models send them), strings as strings; else not at all. */
function compare(actual: unknown, expected: number | string): number | undefined {
  if (typeof expected === 'number') {
    const number =
      typeof actual === 'number' ? actual : typeof actual === 'string' && actual.trim() !== '' ? Number(actual) : Number.NaN;
    return Number.isFinite(number) ? number - expected : undefined;
  }
  return typeof actual === 'string' ? actual.localeCompare(expected) : undefined;
}

export function ruleHolds(rule: ArgumentRule, input: unknown): boolean {
  const target = atPointer(input, rule.path);
  if (rule.op === 'exists') return target.found === (rule.value ?? true);
  if (!target.found) return false;
  const actual = target.value;
  switch (rule.op) {
    case 'eq':
      return isDeepStrictEqual(actual, rule.value);
    case 'ne':
      return !isDeepStrictEqual(actual, rule.value);
    case 'in':
      return (rule.value as unknown[]).some((candidate) => isDeepStrictEqual(actual, candidate));
    case 'matches':
      return (
        (typeof actual === 'string' || typeof actual === 'number') &&
        pattern(rule.value as string)
          .matcher(String(actual))
          .find()
      );
    default: {
      const order = compare(actual, rule.value as number | string);
      if (order === undefined) return false;
      return { gt: order > 0, gte: order >= 0, lt: order < 0, lte: order <= 0 }[rule.op];
    }
  }
}

/** Of the rules on this tool that hold for the call, the strictest (the first of equals), with its index among all rules. */
export function decisiveRule(
  rules: readonly ArgumentRule[],
  toolName: string,
  input: unknown,
): { index: number; rule: ArgumentRule } | undefined {
  let found: { index: number; rule: ArgumentRule } | undefined;
  for (const [index, rule] of rules.entries()) {
    if (rule.tool !== toolName || !ruleHolds(rule, input)) continue;
    if (!found || STRICTNESS[rule.mode] > STRICTNESS[found.rule.mode]) found = { index, rule };
  }
  return found;
}

/** How a rule reads in the ledger and in what the model is told. */
const describeRule = ({ tool, path, op, value, mode }: ArgumentRule, index: number) =>
  `argument rule ${index + 1} (${tool}: ${describeTest({ path, op, value })} -> ${mode})`;

/**
 * The rule that refused a call, as the model and the approver are told. An action's argument rules are its
 * action rule's (a webhook's action) or its inbox assignment's (an email's).
 */
export const refusedBy = (source: ActionSource, { rule, index }: { rule: ArgumentRule; index: number }) =>
  `Refused by ${source === 'email' ? "the inbox's" : "the action rule's"} ${describeRule(rule, index)}`;

/** A rule's test as it reads: `/amount gt 100`. */
export const describeTest = ({ path, op, value }: Pick<ArgumentRule, 'path' | 'op' | 'value'>) =>
  `${path || '/'} ${op}${value === undefined ? '' : ` ${JSON.stringify(value)}`}`;
