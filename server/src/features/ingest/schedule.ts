import type { WebhookSchedule } from '../../db/schema.ts';

const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };
const formatters = new Map<string, Intl.DateTimeFormat>();

/** Weekday (0 = Sunday) and HH:MM of an instant in a time zone. */
function localTime(instant: Date, timeZone: string): { day: number; time: string } {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(instant).map((part) => [part.type, part.value]));
  return { day: WEEKDAYS[parts.weekday!]!, time: `${parts.hour}:${parts.minute}` };
}

/** Whether deliveries are accepted at `now`: inside any window [start, end) of its weekday. */
export function isWithinSchedule(schedule: WebhookSchedule | null, now: Date): boolean {
  if (!schedule) return true;
  const { day, time } = localTime(now, schedule.timezone);
  return schedule.windows.some((window) => window.days.includes(day) && time >= window.start && time < window.end);
}

/** The next minute at which a window is open, within 8 days (minute steps keep DST changes right). */
export function nextWindowOpening(schedule: WebhookSchedule, now: Date): Date {
  const minute = 60_000;
  let probe = new Date(Math.ceil(now.getTime() / minute) * minute);
  for (let i = 0; i < 8 * 24 * 60; i++, probe = new Date(probe.getTime() + minute)) {
    if (isWithinSchedule(schedule, probe)) return probe;
  }
  return new Date(now.getTime() + 24 * 60 * minute);
}
