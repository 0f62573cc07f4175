import { Badge, Group, Table, Text } from '@mantine/core';
import type { paths } from '../../api/schema';

type McpTool =
  paths['/orgs/{org}/mcp-servers']['get']['responses'][200]['content']['application/json']['mcpServers'][number]['tools'][number];

const HINTS = [
  ['readOnlyHint', 'read-only', 'green'],
  ['idempotentHint', 'idempotent', 'blue'],
  ['destructiveHint', 'destructive', 'red'],
  ['openWorldHint', 'open world', 'gray'],
] as const;

/** A server's tools: the name agents use, what the server says of each, and why one is not offered. */
export function McpToolsTable({ tools }: { tools: McpTool[] }) {
  return (
    <Table aria-label="Tools" verticalSpacing={4}>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Tool</Table.Th>
          <Table.Th>What it does</Table.Th>
          <Table.Th>Annotations</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {tools.map((tool) => (
          <Table.Tr key={tool.name}>
            <Table.Td>
              <Text size="sm" ff="monospace">
                {tool.offeredAs ?? tool.name}
              </Text>
              {tool.problem && (
                <Text size="xs" c="red">
                  Not offered: {tool.problem}
                </Text>
              )}
            </Table.Td>
            <Table.Td>
              <Text size="sm">{tool.description}</Text>
            </Table.Td>
            <Table.Td>
              <Group gap={4}>
                {HINTS.filter(([key]) => tool.annotations[key]).map(([key, label, color]) => (
                  <Badge key={key} size="sm" variant="dot" color={color} tt="none">
                    {label}
                  </Badge>
                ))}
                {!tool.annotations.readOnlyHint && !tool.annotations.idempotentHint && (
                  <Text size="xs" c="dimmed">
                    not repeated after a crash
                  </Text>
                )}
              </Group>
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
