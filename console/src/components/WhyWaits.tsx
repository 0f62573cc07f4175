import { Text } from '@mantine/core';
import { describeArgumentRule } from '../lib/format';

type ModeSource = { source?: string; index?: number; rule?: { path: string; op: string; value?: unknown; mode: string } } | null;

/** Why a call got its mode, or waits: an argument rule, an interrupted run, or (said nowhere) the rule's mode for the tool. */
export function WhyWaits({ modeSource, stagedReason }: { modeSource: unknown; stagedReason: string | null }) {
  const source = modeSource as ModeSource;
  const rule = source?.source === 'argument_rule' && source.rule ? source.rule : null;
  return (
    <>
      {rule && (
        <Text size="xs" c="dimmed">
          argument rule {(source?.index ?? 0) + 1}: {describeArgumentRule(rule)}
        </Text>
      )}
      {source?.source === 'override' && (
        <Text size="xs" c="dimmed">
          set by the request
        </Text>
      )}
      {stagedReason && (
        <Text size="xs" c="orange.9">
          {stagedReason}
        </Text>
      )}
    </>
  );
}
