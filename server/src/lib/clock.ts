/** Source of the current time; tests inject a controllable one to expire sessions and tokens. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
