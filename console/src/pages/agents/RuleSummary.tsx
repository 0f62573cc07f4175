import { Stack, Text } from '@mantine/core';
import type { Answer } from '../../api/client';
import { DecidedBy } from '../../components/Approvers';
import { ArgumentRuleList } from '../../components/ArgumentRules';
import { describeToolModes } from '../../components/CallRules';

type Rule = Answer<'/orgs/{org}/action-rules', 'get'>['actionRules'][number];

/** What an action rule does with each call, in a table cell: the modes, the argument rules that override them, who decides. */
export function RuleSummary({ org, rule }: { org: string; rule: Rule }) {
  return (
    <Stack gap={2}>
      <Text size="sm" ff="monospace">
        {describeToolModes(rule.approvalRules)}
      </Text>
      <ArgumentRuleList rules={rule.argumentRules} />
      <DecidedBy org={org} approvers={rule.approvers} minApprovals={rule.minApprovals} />
    </Stack>
  );
}
