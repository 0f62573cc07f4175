import { describe, expect, it } from 'vitest';
import { MAX_DECISION_REASON_CHARS } from '../approvals.service.ts';
import { authenticationFailure, readReplyDecision } from './reply-reading.ts';

describe('readReplyDecision', () => {
  it.each([
    ['approve', 'approve', { kind: 'approve', reason: null }],
    ['approved, in any case', 'APPROVED', { kind: 'approve', reason: null }],
    ['approve after blank lines and a quote', '\r\n> reject\n\n  Approve  \nthanks', { kind: 'approve', reason: null }],
    [
      'approve with why, after punctuation',
      'Approve: the customer confirmed by phone',
      { kind: 'approve', reason: 'the customer confirmed by phone' },
    ],
    ['reject without a reason', 'reject', { kind: 'reject', reason: null }],
    [
      'rejected with a reason after punctuation',
      'Rejected: the customer asked us to wait',
      { kind: 'reject', reason: 'the customer asked us to wait' },
    ],
    ['reject with a reason after a dash', 'reject — not this week', { kind: 'reject', reason: 'not this week' }],
    ['a line naming both', 'approve? no, reject', { kind: 'unclear', firstLine: 'approve? no, reject' }],
    ['a word that only starts like one', 'approvement pending', { kind: 'unclear', firstLine: 'approvement pending' }],
    ['anything else', 'Looks fine to me', { kind: 'unclear', firstLine: 'Looks fine to me' }],
    ['nothing but quotes', '> approve\n>> reject', { kind: 'unclear', firstLine: '' }],
    ['an empty reply', '', { kind: 'unclear', firstLine: '' }],
    [
      'send back with what to do instead',
      'Send back: refund 200, not 250\n\nthanks',
      { kind: 'send_back', reason: 'refund 200, not 250' },
    ],
    ['send it back, any case', 'SEND IT BACK - ask the customer first', { kind: 'send_back', reason: 'ask the customer first' }],
    ['send back without a message', 'send back', { kind: 'unclear', firstLine: 'send back' }],
  ])('%s', (_name, text, decision) => {
    expect(readReplyDecision(text)).toEqual(decision);
  });

  it('cuts a long reason to the decision reason limit, and a long unclear line to 200 characters', () => {
    expect(readReplyDecision(`reject ${'x'.repeat(5000)}`)).toEqual({
      kind: 'reject',
      reason: 'x'.repeat(MAX_DECISION_REASON_CHARS),
    });
    expect(readReplyDecision('y'.repeat(500))).toEqual({ kind: 'unclear', firstLine: 'y'.repeat(200) });
  });
});

describe('authenticationFailure', () => {
  it.each([
    ["the provider's checks pass", { spf: 'pass', dkim: 'pass', dmarc: 'pass' }, {}, undefined],
    ['nothing to check is no failure', { spf: 'none', dkim: 'none' }, {}, undefined],
    ["the provider's SPF fails", { spf: 'fail', dkim: 'pass' }, {}, "the provider's SPF check says fail"],
    ["the provider's DKIM soft-fails", { dkim: 'SoftFail' }, {}, "the provider's DKIM check says SoftFail"],
    ["the provider's DMARC errs", { dmarc: 'permerror' }, {}, "the provider's DMARC check says permerror"],
    ['no results at all', null, {}, undefined],
    [
      'Authentication-Results that pass',
      null,
      { 'authentication-results': 'mx.example; spf=pass smtp.mailfrom=a.example; dkim=pass header.d=a.example' },
      undefined,
    ],
    [
      'Authentication-Results with a failing DMARC',
      null,
      { 'authentication-results': 'mx.example; spf=pass; DMARC=Fail header.from=a.example' },
      'Authentication-Results says dmarc=fail',
    ],
    [
      'the provider first, then the header',
      { spf: 'fail' },
      { 'authentication-results': 'dkim=fail' },
      "the provider's SPF check says fail",
    ],
  ])('%s', (_name, authentication, headers, failure) => {
    expect(authenticationFailure(authentication, headers)).toBe(failure);
  });
});
