/**
 * An answer a fake outside service holds back until the test releases it: the fake awaits `hold()`
 * before answering; the test awaits `held` (a request is being held) and calls `release`.
 */
export function answerHold() {
  let release!: () => void;
  let markHeld!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = new Promise<void>((resolve) => (markHeld = resolve));
  return {
    async hold(): Promise<void> {
      markHeld();
      await released;
    },
    control: { held, release: () => release() },
  };
}

export type AnswerHold = ReturnType<typeof answerHold>;
