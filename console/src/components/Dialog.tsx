import { Modal, type ModalProps } from '@mantine/core';
import { Fragment, type ReactNode, useEffect, useRef, useState } from 'react';

/** What the dialog shows: the value it opened with, kept while it closes; a new key for each opening. */
interface Shown<T> {
  value: T;
  key: number;
  closing: boolean;
}

/**
 * A dialog opened by a value (null: closed) that animates both ways and keeps showing that value
 * until it has faded out, instead of emptying as it goes. Its body is mounted afresh for each
 * opening, so a form's state, a refusal or a save still under way of one opening never shows in the
 * next; while closed, nothing of it is mounted. The body gets a `close` of its own opening: a save
 * that ends after the dialog was closed (while it fades) closes nothing the page opened since.
 */
export function Dialog<T>({
  value,
  title,
  children,
  ...modal
}: {
  value: T | null;
  title: (value: T) => ReactNode;
  children: (value: T, close: () => void) => ReactNode;
} & Omit<ModalProps, 'opened' | 'title' | 'children' | 'onExitTransitionEnd'>) {
  const [shown, setShown] = useState<Shown<T> | null>(null);
  /** The key of the opening that is open now (none while closed or fading); keys are never used twice. */
  const openKey = useRef<number | null>(null);
  const lastKey = useRef(0);
  // Adjusted to the value as it renders (React's way of deriving state from a prop): an opening mounts
  // a new body, a value that changes while open is followed in the same body, a closing keeps the last.
  if (value === null) {
    if (shown && !shown.closing) setShown({ ...shown, closing: true });
  } else if (!shown || shown.closing) setShown({ value, key: ++lastKey.current, closing: false });
  else if (shown.value !== value) setShown({ ...shown, value });
  const open = value !== null && shown !== null && !shown.closing ? shown.key : null;
  useEffect(() => {
    openKey.current = open;
  }, [open]);
  const closeOpening = (key: number) => () => {
    if (openKey.current === key) modal.onClose();
  };
  return (
    <Modal
      {...modal}
      opened={value !== null}
      title={shown && title(shown.value)}
      onExitTransitionEnd={() => setShown((now) => (now?.closing ? null : now))}
    >
      {shown && <Fragment key={shown.key}>{children(shown.value, closeOpening(shown.key))}</Fragment>}
    </Modal>
  );
}
