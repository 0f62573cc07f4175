import type { Clock } from '../../src/lib/clock.ts';

/** A clock that follows real time until a test moves it. */
export class TestClock implements Clock {
  #offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.#offsetMs);
  }
  advance(ms: number): void {
    this.#offsetMs += ms;
  }
  reset(): void {
    this.#offsetMs = 0;
  }
}
