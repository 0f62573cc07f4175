import { Stack, Text } from '@mantine/core';
import { Fragment } from 'react';
import type { Answer } from '../../api/client';
import { UserName } from '../../components/UserName';
import { describeArgumentRule } from '../../lib/format';

type Rule = Answer<'/orgs/{org}/action-rules', 'get'>['actionRules'][number];

/** What an action rule does with each call, in a table cell: the modes, the argument rules that override them, who decides. */
export function RuleSummary({ org, rule }: { org: string; rule: Rule }) {
  const named = rule.approvers?.userIds ?? [];
  const admins = rule.approvers === null || rule.approvers.role === 'Admin';
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
      <Text size="xs" c="dimmed">
        decided by{' '}
        {named.map((userId, index) => (
          <Fragment key={userId}>
            {index > 0 && ', '}
            <UserName org={org} userId={userId} />
          </Fragment>
        ))}
        {named.length > 0 && admins && ' and '}
        {admins && "the org's admins"}
        {rule.minApprovals > 1 && `; ${rule.minApprovals} approvals per call`}
      </Text>
    </Stack>
  );
}
