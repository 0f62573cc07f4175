import { Card, Group, Progress, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import type { components } from '../../api/schema';
import { QueryError } from '../../components/RouteError';
import { formatTime } from '../../lib/format';
import { keys } from '../../lib/queries';

type Budgets = components['schemas']['Budgets'];
type Status = NonNullable<Budgets['org']>;

/** How much of a budget is spent, by its tighter maximum. */
function share(status: Status): number {
  const { budget } = status;
  const shares = [
    budget.maxTokens !== undefined ? status.spentTokens / Math.max(budget.maxTokens, 1) : 0,
    budget.maxCostUsd !== undefined ? status.spentCostUsd / Math.max(budget.maxCostUsd, 0.000001) : 0,
  ];
  return Math.min(100, Math.round(100 * Math.max(...shares)));
}

function BudgetLine({ name, status }: { name: string; status: Status }) {
  const { budget } = status;
  const limits = [
    budget.maxTokens !== undefined ? `${status.spentTokens} of ${budget.maxTokens} tokens` : null,
    budget.maxCostUsd !== undefined ? `$${status.spentCostUsd.toFixed(2)} of $${budget.maxCostUsd}` : null,
  ].filter(Boolean);
  const used = share(status);
  return (
    <Stack gap={4}>
      <Group justify="space-between">
        <Text fw={600}>{name}</Text>
        <Text size="sm">
          {limits.join(', ')} this {budget.period}; then it {budget.onExceed === 'pause' ? 'pauses for approval' : 'fails'}
        </Text>
      </Group>
      <Progress
        value={used}
        color={used >= 100 ? 'red.8' : used >= 80 ? 'orange.9' : 'blue.7'}
        aria-label={`${name}: ${used}% used`}
      />
      <Text size="xs" c="dimmed">
        Starts again {formatTime(status.periodEnd)}
      </Text>
    </Stack>
  );
}

/** The org's budget and its agents', with what each has spent this period. */
export function BudgetsCard({ org }: { org: string }) {
  const budgets = useQuery({
    queryKey: [...keys.org(org), 'budgets'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/budgets', { params: { path: { org } } })),
  });
  if (budgets.error) return <QueryError error={budgets.error} />;
  const data = budgets.data;
  if (!data || (!data.org && data.agents.length === 0)) return null;
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="sm">
        Budgets
      </Title>
      <Stack>
        {data.org && <BudgetLine name="Organization" status={data.org} />}
        {data.agents.map((agent) => (
          <BudgetLine key={agent.agentId} name={agent.agentName} status={agent} />
        ))}
      </Stack>
    </Card>
  );
}
