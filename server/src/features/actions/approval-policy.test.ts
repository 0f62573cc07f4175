import { describe, expect, it } from 'vitest';
import { readApprovalDecision, resolveToolMode } from './approval-policy.ts';

const TOOL = 'generateDocument';
type Setting = 'allow' | 'ask' | 'agent' | 'invalid' | 'absent';
/** The mode alone (what decided it is checked where the run stores it). */
const modeOf = (input: Parameters<typeof resolveToolMode>[0]) => resolveToolMode(input).mode;
const setting = (value: Setting): Record<string, unknown> =>
  value === 'absent' ? {} : { [TOOL]: value === 'invalid' ? 'sometimes' : value };

describe('resolveToolMode', () => {
  // [rule default, per-request override, webhook allows overrides] -> mode, without an "always deny".
  const table: Array<[Setting, Setting, boolean, string]> = [
    ['allow', 'absent', false, 'allow'],
    ['allow', 'absent', true, 'allow'],
    ['allow', 'ask', false, 'allow'],
    ['allow', 'ask', true, 'ask'],
    ['allow', 'agent', true, 'agent'],
    ['allow', 'invalid', false, 'allow'],
    ['allow', 'invalid', true, 'allow'],
    ['ask', 'allow', false, 'ask'],
    ['ask', 'allow', true, 'allow'],
    ['ask', 'absent', true, 'ask'],
    ['ask', 'invalid', true, 'ask'],
    ['agent', 'absent', false, 'agent'],
    ['agent', 'allow', false, 'agent'],
    ['agent', 'allow', true, 'allow'],
    ['agent', 'ask', true, 'ask'],
    ['agent', 'invalid', true, 'agent'],
    ['absent', 'absent', false, 'ask'],
    ['absent', 'absent', true, 'ask'],
    ['absent', 'allow', false, 'ask'],
    ['absent', 'allow', true, 'allow'],
    ['absent', 'invalid', true, 'ask'],
    ['invalid', 'absent', false, 'ask'],
    ['invalid', 'absent', true, 'ask'],
    ['invalid', 'allow', false, 'ask'],
    ['invalid', 'agent', true, 'agent'],
    ['invalid', 'invalid', true, 'ask'],
  ];
  for (const [rule, override, allowOverrides, expected] of table) {
    it(`rule ${rule}, override ${override}, overrides ${allowOverrides ? 'allowed' : 'not allowed'} -> ${expected}`, () => {
      expect(
        modeOf({
          toolName: TOOL,
          ruleDefaults: setting(rule),
          requestOverrides: setting(override),
          allowOverrides,
          alwaysDeny: false,
        }),
      ).toBe(expected);
    });
  }

  it('"always deny" beats every rule default and override, allowed or not', () => {
    const values: Setting[] = ['allow', 'ask', 'agent', 'invalid', 'absent'];
    for (const rule of values) {
      for (const override of values) {
        for (const allowOverrides of [true, false]) {
          expect(
            modeOf({
              toolName: TOOL,
              ruleDefaults: setting(rule),
              requestOverrides: setting(override),
              allowOverrides,
              alwaysDeny: true,
            }),
          ).toBe('deny');
        }
      }
    }
  });

  it('an unknown tool name in the rule or the override changes nothing for other tools', () => {
    const mode = modeOf({
      toolName: TOOL,
      ruleDefaults: { [TOOL]: 'allow', launchMissiles: 'allow' },
      requestOverrides: { launchMissiles: 'ask' },
      allowOverrides: true,
      alwaysDeny: false,
    });
    expect(mode).toBe('allow');
    expect(
      modeOf({ toolName: 'launchMissiles', ruleDefaults: {}, requestOverrides: {}, allowOverrides: true, alwaysDeny: false }),
    ).toBe('ask');
  });

  it('ignores inherited properties (no prototype tricks)', () => {
    expect(
      modeOf({ toolName: 'constructor', ruleDefaults: {}, requestOverrides: {}, allowOverrides: true, alwaysDeny: false }),
    ).toBe('ask');
  });
});

describe('readApprovalDecision (agent mode, fail-closed)', () => {
  it('runs only an explicit "no_approval_needed", and strips the field from the input', () => {
    expect(readApprovalDecision({ a: 1, approvalDecision: 'no_approval_needed' })).toEqual({ runNow: true, input: { a: 1 } });
    for (const decision of ['approval_needed', 'unsure', 'NO_APPROVAL_NEEDED', '', null, true, { value: 'no_approval_needed' }]) {
      expect(readApprovalDecision({ a: 1, approvalDecision: decision })).toEqual({ runNow: false, input: { a: 1 } });
    }
    expect(readApprovalDecision({ a: 1 })).toEqual({ runNow: false, input: { a: 1 } });
    expect(readApprovalDecision('{"a": 1, "approvalDecision": "no_approval_needed"')).toEqual({
      runNow: false,
      input: '{"a": 1, "approvalDecision": "no_approval_needed"',
    });
    expect(readApprovalDecision(['no_approval_needed'])).toMatchObject({ runNow: false });
  });
});
