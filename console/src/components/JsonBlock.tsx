import { Code } from '@mantine/core';
import type { CSSProperties } from 'react';
import { prettyJson } from '../lib/format';

/**
 * A JSON value as formatted text, scrolling when long (focusable, so the keyboard can scroll it).
 * `wrap` breaks long lines instead of hiding their ends to the right: for arguments a person decides on.
 */
export function JsonBlock(props: { value: unknown; maxHeight?: number; label?: string; wrap?: boolean }) {
  const { value, maxHeight = 320, label, wrap = false } = props;
  const style: CSSProperties = wrap
    ? { overflow: 'auto', whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }
    : { overflow: 'auto' };
  return (
    <Code block mah={maxHeight} style={style} tabIndex={0} aria-label={label}>
      {typeof value === 'string' ? value : prettyJson(value)}
    </Code>
  );
}
