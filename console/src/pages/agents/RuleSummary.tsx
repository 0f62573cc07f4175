import { Stack, Text } from '@mantine/core';
import type { Answer } from '../../api/client';
import { DecidedBy } from '../../components/Approvers';
import { describeArgumentRule } from '../../lib/format';

type Rule = Answer<'/orgs/{org}/action-rules', 'get'>['actionRules'][number];

/** What an action rule does with each call, in a table cell: the modes, the argument rules that override them, who decides. */
export function RuleSummary({ org, rule }: { org: string; rule: Rule }) {
  return (
    <Stack gap={2}>
      <Text size="sm" ff="monospace">
        {Object.entries(rule.approvalRules)
          .map(([tool, mode]) => `${tool}: ${mode}`)
          .join(', ') || 'every tool: ask'}
      </Text>
      {rule.argumentRules.map((test, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: numbered by position, as the ledger cites them
        <Text key={index} size="xs" c="dimmed" ff="monospace">
          {index + 1}. {test.tool}: {describeArgumentRule(test)}
        </Text>
      ))}
      <DecidedBy org={org} approvers={rule.approvers} minApprovals={rule.minApprovals} />
    </Stack>
  );
}
