import { SegmentedControl, Stack, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { type Control, Controller, type FieldErrors, type UseFormRegister } from 'react-hook-form';
import { z } from 'zod';
import { toolsQuery } from '../lib/queries';
import { type ArgumentRuleField, ArgumentRules } from './ArgumentRules';

const MODES = ['allow', 'ask', 'agent'] as const;
/** The approval mode of each tool, as a rule's or an inbox assignment's form holds it. */
export const toolModesField = z.record(z.string(), z.enum(MODES));
type WithToolModes = { approvalRules: z.infer<typeof toolModesField> };

/** The modes a rule or an assignment sets, as one line: `sendEmail: allow, refund: ask`. */
export const describeToolModes = (modes: Record<string, string>) =>
  Object.entries(modes)
    .map(([tool, mode]) => `${tool}: ${mode}`)
    .join(', ') || 'every tool: ask';

const MODE_HELP =
  'allow: runs at once · ask: waits for a human · ' +
  'agent: the agent decides, and anything but an explicit "no approval needed" waits';

/** "Approval per tool": a mode for each of the org's tools; a tool not set is ask. */
export function ToolModes<T extends WithToolModes>(props: { control: Control<T>; tools: string[] }) {
  // The generic form narrows to the one field this edits.
  const control = props.control as unknown as Control<WithToolModes>;
  return (
    <Controller
      control={control}
      name="approvalRules"
      render={({ field }) => (
        <Stack gap={4}>
          <Text size="sm" fw={500}>
            Approval per tool
          </Text>
          <Text size="xs" c="dimmed">
            {MODE_HELP}. A tool not set here is ask.
          </Text>
          <Table aria-label="Approval per tool">
            <Table.Tbody>
              {props.tools.map((tool) => (
                <Table.Tr key={tool}>
                  <Table.Td ff="monospace">{tool}</Table.Td>
                  <Table.Td>
                    <SegmentedControl
                      size="xs"
                      aria-label={`Approval mode of ${tool}`}
                      data={[...MODES]}
                      value={field.value[tool] ?? 'ask'}
                      onChange={(mode) => field.onChange({ ...field.value, [tool]: mode })}
                    />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Stack>
      )}
    />
  );
}

/** How a rule's or an inbox assignment's calls run: the mode of each of the org's tools, then the argument rules. */
export function CallRules<T extends WithToolModes & { argumentRules: ArgumentRuleField[] }>(props: {
  org: string;
  control: Control<T>;
  register: UseFormRegister<T>;
  errors: FieldErrors<T>;
}) {
  const { data: tools = [] } = useQuery(toolsQuery(props.org));
  const names = tools.map((tool) => tool.name);
  return (
    <>
      <ToolModes control={props.control} tools={names} />
      <ArgumentRules
        control={props.control}
        register={props.register}
        tools={names}
        errors={props.errors.argumentRules as never}
      />
    </>
  );
}
