/** Signals within this window of one another reach other processes as one NOTIFY. */
export const SIGNAL_WINDOW_MS = 5;

/**
 * A topic's signals to other processes, coalesced: the first goes at once (`notify`); those within
 * the window after it go as one at its end, which opens another window. A signal whose NOTIFY went
 * with its commit (`sent`) only opens a window.
 */
export function createSignalWindows(notify: (topic: string) => void) {
  const windows = new Map<string, { timer?: NodeJS.Timeout; again: boolean }>();
  let closed = false;
  const open = (topic: string) => {
    const window: { timer?: NodeJS.Timeout; again: boolean } = { again: false };
    windows.set(topic, window);
    window.timer = setTimeout(() => {
      windows.delete(topic);
      if (window.again && !closed) {
        notify(topic);
        open(topic);
      }
    }, SIGNAL_WINDOW_MS);
  };
  return {
    tell(topic: string, sent: boolean): void {
      if (closed) return;
      const current = windows.get(topic);
      if (sent) {
        if (!current) open(topic);
      } else if (current) current.again = true;
      else {
        notify(topic);
        open(topic);
      }
    },
    /** A NOTIFY of the topic went within the window: one follows at its end. */
    isOpen: (topic: string) => windows.has(topic),
    /** Sends at once what the open windows held (a wake-up of a stopping process is not lost), then nothing more. */
    close(): void {
      closed = true;
      for (const [topic, { timer, again }] of windows) {
        clearTimeout(timer);
        if (again) notify(topic);
      }
      windows.clear();
    },
  };
}
