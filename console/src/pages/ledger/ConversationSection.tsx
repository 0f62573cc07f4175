import { Badge, Card, Group, Stack, Text, Title } from '@mantine/core';
import type { ConversationMessage } from '../../api/client';
import { EmptyState } from '../../components/FormParts';
import { JsonBlock } from '../../components/JsonBlock';

type Part = { type?: string; text?: string; toolName?: string; input?: unknown; output?: unknown };

/** One part of a model message (AI SDK shapes): text as text, tool calls and results as JSON. */
function MessagePart({ part }: { part: Part }) {
  if (part.type === 'text')
    return (
      <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
        {part.text}
      </Text>
    );
  if (part.type === 'tool-call')
    return (
      <Stack gap={2}>
        <Text size="xs" fw={600}>
          calls {part.toolName}
        </Text>
        <JsonBlock value={part.input} maxHeight={200} wrap label={`Call of ${part.toolName}`} />
      </Stack>
    );
  if (part.type === 'tool-result')
    return (
      <Stack gap={2}>
        <Text size="xs" fw={600}>
          {part.toolName} answered
        </Text>
        <JsonBlock value={part.output} maxHeight={200} wrap label={`Result of ${part.toolName}`} />
      </Stack>
    );
  return <JsonBlock value={part} maxHeight={200} />;
}

/** Spec 2.8: the conversation of the action's run, as the model saw it. */
export function ConversationSection({ messages }: { messages: ConversationMessage[] }) {
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Conversation
      </Title>
      {messages.length === 0 && <EmptyState>The agent has not started on this action yet.</EmptyState>}
      {messages.map((message) => (
        <Card key={message.seq} withBorder padding="xs">
          <Group gap="xs" mb={4}>
            <Badge variant="outline" tt="none" size="sm">
              {message.role}
            </Badge>
          </Group>
          {typeof message.content === 'string' ? (
            <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
              {message.content}
            </Text>
          ) : Array.isArray(message.content) ? (
            <Stack gap="xs">
              {(message.content as Part[]).map((part, index) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: the parts of a stored message never change order
                <MessagePart key={index} part={part} />
              ))}
            </Stack>
          ) : (
            <JsonBlock value={message.content} />
          )}
        </Card>
      ))}
    </Stack>
  );
}
