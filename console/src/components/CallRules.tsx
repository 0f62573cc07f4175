import { SegmentedControl, Stack, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { type Control, Controller, type FieldErrors, type UseFormRegister, useWatch } from 'react-hook-form';
import { z } from 'zod';
import { agentsQuery, toolsQuery } from '../lib/queries';
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

/** A tool a form lists, and whether the chosen agent has it (a mode set earlier for another tool stays in view). */
interface ListedTool {
  name: string;
  agentHas: boolean;
}

/**
 * The tools a rule's or an assignment's form lists, in the org's order: those the agent can call (its own and
 * `always`), then any other the form already sets; every one of the org's tools while no agent is chosen.
 */
function listedTools(orgTools: string[], agentTools: string[] | undefined, set: ReadonlySet<string>): ListedTool[] {
  if (agentTools === undefined) return orgTools.map((name) => ({ name, agentHas: true }));
  const has = new Set(agentTools);
  const listed = orgTools.map((name) => ({ name, agentHas: has.has(name) }));
  return [...listed.filter((tool) => tool.agentHas), ...listed.filter((tool) => !tool.agentHas && set.has(tool.name))];
}

/** "Approval per tool": a mode for each listed tool; a tool not set is ask. */
export function ToolModes<T extends WithToolModes>(props: { control: Control<T>; tools: ListedTool[] }) {
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
          {props.tools.length === 0 && (
            <Text size="sm" c="dimmed">
              The agent has no tools.
            </Text>
          )}
          <Table aria-label="Approval per tool">
            <Table.Tbody>
              {props.tools.map(({ name, agentHas }) => (
                <Table.Tr key={name}>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {name}
                    </Text>
                    {!agentHas && (
                      <Text size="xs" c="dimmed">
                        not the agent's: set earlier, used if the agent gets it
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <SegmentedControl
                      size="xs"
                      aria-label={`Approval mode of ${name}`}
                      data={[...MODES]}
                      value={field.value[name] ?? 'ask'}
                      onChange={(mode) => field.onChange({ ...field.value, [name]: mode })}
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

/**
 * How a rule's or an inbox assignment's calls run: the mode of each tool its agent can call, then the argument
 * rules. `always` names the tools the agent has there whatever its own list (an inbox's `sendEmail`).
 */
export function CallRules<T extends WithToolModes & { argumentRules: ArgumentRuleField[] }>(props: {
  org: string;
  agentId: string | null;
  always?: string[];
  control: Control<T>;
  register: UseFormRegister<T>;
  errors: FieldErrors<T>;
}) {
  const { data: orgTools = [] } = useQuery(toolsQuery(props.org));
  const { data: agents } = useQuery(agentsQuery(props.org));
  const control = props.control as unknown as Control<WithToolModes & { argumentRules: ArgumentRuleField[] }>;
  const [modes, argumentRules] = useWatch({ control, name: ['approvalRules', 'argumentRules'] });
  const agent = agents?.find((candidate) => candidate.id === props.agentId);
  const set = new Set([...Object.keys(modes ?? {}), ...(argumentRules ?? []).map((rule) => rule.tool)]);
  const tools = listedTools(
    orgTools.map((tool) => tool.name),
    agent && [...agent.tools, ...(props.always ?? [])],
    set,
  );
  const names = tools.map((tool) => tool.name);
  return (
    <>
      <ToolModes control={props.control} tools={tools} />
      <ArgumentRules
        control={props.control}
        register={props.register}
        tools={names}
        errors={props.errors.argumentRules as never}
      />
    </>
  );
}
