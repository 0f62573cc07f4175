import { Alert, Badge, Card, Group, List, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { CallInput } from '../../components/EditedInput';
import { StatusBadge } from '../../components/StatusBadge';
import { AnchorLink } from '../../components/links';
import { actionName, counted, usd } from '../../lib/format';
import type { Answer } from '../../api/client';

export type ExperimentResult = Answer<'/orgs/{org}/experiments/{experimentId}', 'get'>['results'][number];

/** Says one difference as a person reads it. */
function describe(difference: ExperimentResult['differences'][number]): string {
  switch (difference.kind) {
    case 'tool_call_added':
      return `${difference.toolName} is called now, not before`;
    case 'tool_call_missing':
      return `${difference.toolName} is no longer called`;
    case 'arguments_changed':
      return `${difference.toolName}: ${difference.changes
        .map((change) => `${change.path || '/'} ${JSON.stringify(change.from)} → ${JSON.stringify(change.to)}`)
        .join('; ')}`;
    case 'approval_needed_now':
      return `${difference.toolName} would wait for approval now: ${difference.reason}`;
    case 'approval_no_longer_needed':
      return `${difference.toolName} would no longer wait for approval (${difference.reason})`;
    case 'final_text_changed':
      return 'The final answer changed';
    case 'status_changed':
      return `Ended ${difference.from} before, ${difference.to} now`;
  }
}

/** One action of an experiment: what the original run did beside what the version did, the differences marked. */
export function ResultComparison({ org, result, version }: { org: string; result: ExperimentResult; version: number }) {
  const changedTools = new Set(
    result.differences.flatMap((difference) => ('toolName' in difference ? [difference.toolName] : [])),
  );
  return (
    <Stack role="region" aria-label="Comparison">
      <Group justify="space-between">
        <Title order={2} size="h3">
          Action{' '}
          <AnchorLink to="/o/$org/ledger/$id" params={{ org, id: result.actionId }}>
            {actionName(result)}
          </AnchorLink>
        </Title>
        <StatusBadge status={result.outcome} />
      </Group>
      {result.differences.length > 0 && (
        <Alert color="orange" title="Differences">
          <List size="sm">
            {result.differences.map((difference, index) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: stored differences never reorder
              <List.Item key={`${difference.kind}-${index}`}>{describe(difference)}</List.Item>
            ))}
          </List>
        </Alert>
      )}
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        {(['baseline', 'candidate'] as const).map((side) => {
          const run = result[side];
          return (
            <Card withBorder key={side} aria-label={side === 'baseline' ? 'Original run' : `Version ${version}`} role="region">
              <Stack gap="xs">
                <Text fw={600}>{side === 'baseline' ? 'Original run' : `Version ${version}`}</Text>
                <Text size="sm" c="dimmed">
                  {run.status} · {counted(run.steps, 'step')} · {counted(run.inputTokens + run.outputTokens, 'token')} · cost{' '}
                  {usd(run.costUsd)}
                </Text>
                {run.toolCalls.map((call, index) => (
                  <Card
                    // biome-ignore lint/suspicious/noArrayIndexKey: the calls of a stored run never reorder
                    key={`${call.toolName}-${index}`}
                    withBorder
                    padding="xs"
                    bg={changedTools.has(call.toolName) ? 'var(--mantine-color-orange-light)' : undefined}
                  >
                    <Group gap="xs">
                      <Text size="sm" ff="monospace" fw={600}>
                        {call.toolName}
                      </Text>
                      <Badge variant="outline" size="sm" tt="none">
                        {(call.status ?? call.replayed)?.replaceAll('_', ' ')}
                      </Badge>
                    </Group>
                    <CallInput
                      toolName={call.toolName}
                      input={call.arguments}
                      approvedInput={call.approvedArguments}
                      maxHeight={160}
                    />
                    {call.approval && (
                      <Text size="xs">
                        {side === 'baseline' ? 'Waited for approval' : 'Would wait for approval'}: {call.approval}
                      </Text>
                    )}
                  </Card>
                ))}
                <Text size="sm" fw={600}>
                  Final answer
                </Text>
                <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
                  {run.error ?? run.finalText ?? '—'}
                </Text>
              </Stack>
            </Card>
          );
        })}
      </SimpleGrid>
    </Stack>
  );
}
