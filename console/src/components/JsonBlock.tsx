import { Code } from '@mantine/core';
import { prettyJson } from '../lib/format';

/** A JSON value as formatted text, scrolling when long (focusable, so the keyboard can scroll it). */
export function JsonBlock({ value, maxHeight = 320, label }: { value: unknown; maxHeight?: number; label?: string }) {
  return (
    <Code block mah={maxHeight} style={{ overflow: 'auto' }} tabIndex={0} aria-label={label}>
      {typeof value === 'string' ? value : prettyJson(value)}
    </Code>
  );
}
