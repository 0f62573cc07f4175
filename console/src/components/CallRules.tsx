import { ActionIcon, Group, SegmentedControl, Stack, Table, Text } from '@mantine/core';
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

/** A tool a form lists; `note` says why a tool the agent cannot call is listed (a mode or rule set for it earlier). */
interface ListedTool {
  name: string;
  note?: string;
}
const NOT_THE_AGENTS = "not the agent's: set earlier, used if the agent gets it";
const NOT_THE_ORGS = 'not a tool of the org now (its MCP server removed, or no longer offering it): set earlier';

/**
 * The tools a rule's or an assignment's form lists, in the org's order: those the agent can call (its own and
 * `always`; every one of the org's tools while no agent is chosen), then any other the form already sets, so
 * that nothing saved is out of view.
 */
function listedTools(orgTools: string[], agentTools: string[] | undefined, set: ReadonlySet<string>): ListedTool[] {
  const callable = new Set(agentTools ?? orgTools);
  const orgHas = new Set(orgTools);
  return [
    ...orgTools.filter((name) => callable.has(name)).map((name) => ({ name })),
    ...orgTools.filter((name) => !callable.has(name) && set.has(name)).map((name) => ({ name, note: NOT_THE_AGENTS })),
    ...[...set].filter((name) => name !== '' && !orgHas.has(name)).map((name) => ({ name, note: NOT_THE_ORGS })),
  ];
}

type Modes = WithToolModes['approvalRules'];
const withoutKey = (modes: Modes, name: string): Modes =>
  Object.fromEntries(Object.entries(modes).filter(([tool]) => tool !== name));

/** One listed tool's row: its name (and why it is listed, for a tool the agent cannot call) and its mode. */
function ToolModeRow({
  tool: { name, note },
  modes,
  onChange,
}: {
  tool: ListedTool;
  modes: Modes;
  onChange: (modes: Modes) => void;
}) {
  return (
    <Table.Tr>
      <Table.Td>
        <Text size="sm" ff="monospace">
          {name}
        </Text>
        {note && (
          <Text size="xs" c="dimmed">
            {note}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <Group gap={4} wrap="nowrap">
          <SegmentedControl
            size="xs"
            aria-label={`Approval mode of ${name}`}
            data={[...MODES]}
            value={modes[name] ?? 'ask'}
            onChange={(mode) => onChange({ ...modes, [name]: mode })}
          />
          {note && name in modes && (
            // A mode for a tool the agent cannot call is taken out here, not only set to ask.
            <ActionIcon
              variant="subtle"
              color="red"
              aria-label={`Remove the mode of ${name}`}
              onClick={() => onChange(withoutKey(modes, name))}
            >
              ✕
            </ActionIcon>
          )}
        </Group>
      </Table.Td>
    </Table.Tr>
  );
}

/** "Approval per tool": a mode for each listed tool (none while the org's tools load); a tool not set is ask. */
export function ToolModes<T extends WithToolModes>(props: { control: Control<T>; tools: ListedTool[] | undefined }) {
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
          {props.tools?.length === 0 && (
            <Text size="sm" c="dimmed">
              The agent has no tools.
            </Text>
          )}
          <Table aria-label="Approval per tool">
            <Table.Tbody>
              {props.tools?.map((tool) => (
                <ToolModeRow key={tool.name} tool={tool} modes={field.value} onChange={field.onChange} />
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
  const { data: orgTools } = useQuery(toolsQuery(props.org));
  const { data: agents } = useQuery(agentsQuery(props.org));
  const control = props.control as unknown as Control<WithToolModes & { argumentRules: ArgumentRuleField[] }>;
  const [modes, argumentRules] = useWatch({ control, name: ['approvalRules', 'argumentRules'] });
  const agent = agents?.find((candidate) => candidate.id === props.agentId);
  const set = new Set([...Object.keys(modes ?? {}), ...(argumentRules ?? []).map((rule) => rule.tool)]);
  const tools =
    orgTools &&
    listedTools(
      orgTools.map((tool) => tool.name),
      agent && [...agent.tools, ...(props.always ?? [])],
      set,
    );
  const names = tools?.map((tool) => tool.name) ?? [];
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
