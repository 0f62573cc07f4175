import { describe, expect, it } from 'vitest';
import { ACTION_STATUSES } from '../../db/schema.ts';
import { CALLBACK_EVENT_OF, LAST_CALLBACK_EVENTS } from '../callbacks/outbox.ts';
import { canTransition, TERMINAL_STATUSES } from './lifecycle.ts';

describe('the action lifecycle', () => {
  it('announces last exactly the events of the statuses it never leaves (the callback dispatcher relies on it)', () => {
    const never = ACTION_STATUSES.filter((from) => ACTION_STATUSES.every((to) => !canTransition(from, to)));
    expect([...never].sort()).toEqual([...TERMINAL_STATUSES].sort());
    expect([...LAST_CALLBACK_EVENTS].sort()).toEqual(never.map((status) => CALLBACK_EVENT_OF[status]).sort());
  });
});
