import { describe, expect, it } from 'vitest';
import { periodOf } from './budgets.service.ts';

describe('periodOf', () => {
  it.each([
    ['a day', 'day', '2026-11-25T13:45:00.000Z', 'day:2026-11-25', '2026-11-25T00:00:00.000Z', '2026-11-26T00:00:00.000Z'],
    [
      'the first instant of a day',
      'day',
      '2026-11-25T00:00:00.000Z',
      'day:2026-11-25',
      '2026-11-25T00:00:00.000Z',
      '2026-11-26T00:00:00.000Z',
    ],
    [
      'the last instant of a day',
      'day',
      '2026-11-25T23:59:59.999Z',
      'day:2026-11-25',
      '2026-11-25T00:00:00.000Z',
      '2026-11-26T00:00:00.000Z',
    ],
    [
      'the last day of a year',
      'day',
      '2026-12-31T12:00:00.000Z',
      'day:2026-12-31',
      '2026-12-31T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ],
    ['a leap day', 'day', '2028-02-29T08:00:00.000Z', 'day:2028-02-29', '2028-02-29T00:00:00.000Z', '2028-03-01T00:00:00.000Z'],
    ['a month', 'month', '2026-11-25T13:45:00.000Z', 'month:2026-11', '2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
    [
      'December into the next year',
      'month',
      '2026-12-31T23:59:59.999Z',
      'month:2026-12',
      '2026-12-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ],
    [
      'February of a leap year',
      'month',
      '2028-02-10T00:00:00.000Z',
      'month:2028-02',
      '2028-02-01T00:00:00.000Z',
      '2028-03-01T00:00:00.000Z',
    ],
  ] as const)('%s', (_name, period, now, key, start, end) => {
    expect(periodOf(period, new Date(now))).toEqual({ key, start: new Date(start), end: new Date(end) });
  });
});
