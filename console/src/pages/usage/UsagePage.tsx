import { BarChart } from '@mantine/charts';
import { Card, Group, SegmentedControl, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { components } from '../../api/schema';
import { EmptyState } from '../../components/FormParts';
import { QueryError } from '../../components/RouteError';
import { counted, usd } from '../../lib/format';
import { useOrgSlug } from '../../lib/org';
import { keys } from '../../lib/queries';
import { BudgetsCard } from './BudgetsCard';

type Usage = components['schemas']['Usage'];
type Totals = Usage['totals'];
type Measure = 'cost' | 'tokens';
const DAY = 86_400_000;
const RANGES = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
];

const tokens = (value: number) => new Intl.NumberFormat('en').format(value);
/** A group's value on the chart: its priced cost, or its tokens. */
const measured = (totals: Totals, measure: Measure) =>
  measure === 'cost' ? Number((totals.costUsd ?? 0).toFixed(6)) : totals.totalTokens;

function useUsage(org: string, days: number, groupBy: 'day' | 'agent') {
  // Whole UTC days, today included: the same range for both groupings, and a key that stays put.
  const from = new Date(Math.floor(Date.now() / DAY) * DAY - (days - 1) * DAY).toISOString().slice(0, 10);
  return useQuery({
    queryKey: [...keys.org(org), 'usage', groupBy, from],
    queryFn: () => unwrap(api.GET('/orgs/{org}/usage', { params: { path: { org }, query: { from, groupBy } } })),
  });
}

function Stat({ label, value, note }: { label: string; value: string; note?: string }) {
  return (
    <Card withBorder padding="sm">
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={700} size="xl">
        {value}
      </Text>
      {note && (
        <Text size="xs" c="dimmed">
          {note}
        </Text>
      )}
    </Card>
  );
}

/** What the org's agents cost, per day and per agent, and its budgets. */
export function UsagePage() {
  const org = useOrgSlug();
  const [days, setDays] = useState('30');
  const [chosen, setMeasure] = useState<Measure>('cost');
  const perDay = useUsage(org, Number(days), 'day');
  const perAgent = useUsage(org, Number(days), 'agent');
  const totals = perDay.data?.totals;
  // No call in the range has a price: a cost chart would be empty axes, so the tokens are charted.
  const nothingPriced = totals !== undefined && totals.calls > 0 && totals.costUsd === null;
  const measure: Measure = nothingPriced ? 'tokens' : chosen;
  const label = measure === 'cost' ? 'Cost (USD)' : 'Tokens';
  const format = measure === 'cost' ? (value: number) => usd(value) : tokens;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Usage
        </Title>
        <Group>
          <SegmentedControl
            aria-label="Measure"
            value={measure}
            onChange={(value) => setMeasure(value as Measure)}
            data={[
              { value: 'cost', label: 'Cost', disabled: nothingPriced },
              { value: 'tokens', label: 'Tokens' },
            ]}
          />
          <SegmentedControl aria-label="Range" value={days} onChange={setDays} data={RANGES} />
        </Group>
      </Group>
      {perDay.error && <QueryError error={perDay.error} />}
      {perAgent.error && !perDay.error && <QueryError error={perAgent.error} />}
      {totals && (
        <SimpleGrid cols={{ base: 1, sm: 3 }}>
          <Stat label="Model calls" value={tokens(totals.calls)} />
          <Stat
            label="Tokens"
            value={tokens(totals.totalTokens)}
            note={`${tokens(totals.inputTokens)} in, ${tokens(totals.outputTokens)} out`}
          />
          <Stat
            label="Cost"
            value={usd(totals.costUsd)}
            note={
              totals.unpricedCalls > 0
                ? `Not counted: ${counted(totals.unpricedCalls, 'call')} to models without a price`
                : undefined
            }
          />
        </SimpleGrid>
      )}
      <BudgetsCard org={org} />
      {perDay.data && perDay.data.totals.calls === 0 && <EmptyState>No model calls in this range yet.</EmptyState>}
      {perDay.data && perDay.data.totals.calls > 0 && (
        <Card withBorder>
          <Title order={2} size="h4" mb="sm">
            {label} per day (UTC)
          </Title>
          <BarChart
            h={220}
            role="img"
            aria-label={`${label} per day`}
            data={perDay.data.groups.map((group) => ({ day: group.key.slice(5), value: measured(group, measure) }))}
            dataKey="day"
            series={[{ name: 'value', label, color: 'blue.7' }]}
            valueFormatter={format}
            tickLine="y"
          />
        </Card>
      )}
      {perAgent.data && perAgent.data.groups.length > 0 && (
        <Card withBorder>
          <Title order={2} size="h4" mb="sm">
            {label} per agent
          </Title>
          <BarChart
            h={Math.max(120, 48 * perAgent.data.groups.length)}
            role="img"
            aria-label={`${label} per agent`}
            orientation="vertical"
            data={perAgent.data.groups.map((group) => ({
              agent: group.label ?? '(deleted agent)',
              value: measured(group, measure),
            }))}
            dataKey="agent"
            series={[{ name: 'value', label, color: 'teal.8' }]}
            valueFormatter={format}
            yAxisProps={{ width: 140 }}
            maxBarWidth={28}
          />
          <Table aria-label="Usage per agent" mt="md">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Agent</Table.Th>
                <Table.Th>Calls</Table.Th>
                <Table.Th>Tokens</Table.Th>
                <Table.Th>Cost</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {perAgent.data.groups.map((group) => (
                <Table.Tr key={group.key}>
                  <Table.Td>{group.label ?? '(deleted agent)'}</Table.Td>
                  <Table.Td>{tokens(group.calls)}</Table.Td>
                  <Table.Td>{tokens(group.totalTokens)}</Table.Td>
                  <Table.Td>
                    {usd(group.costUsd)}
                    {group.unpricedCalls > 0 && group.costUsd !== null ? ` (+${group.unpricedCalls} unpriced)` : ''}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Card>
      )}
    </Stack>
  );
}
