import { Anchor, Badge, Box, Card, Group, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { api, unwrap } from '../../api/client';
import { AnchorLink } from '../../components/links';
import { QueryError } from '../../components/RouteError';
import { StatusBadge } from '../../components/StatusBadge';
import { fileSize, formatTime } from '../../lib/format';
import { useOrgSlug } from '../../lib/org';
import { keys } from '../../lib/queries';

/**
 * One thread, oldest message first. A message's HTML (sanitized when it was stored) shows in a
 * sandboxed frame served with its own policy: no script runs and nothing loads from elsewhere. The
 * frame can be made taller by dragging its corner.
 */
export function EmailThreadPage() {
  const org = useOrgSlug();
  const { id } = useParams({ from: '/signed-in/o/$org/email/threads/$id' });
  const thread = useQuery({
    queryKey: [...keys.org(org), 'email-thread', id],
    queryFn: () => unwrap(api.GET('/orgs/{org}/email/threads/{threadId}', { params: { path: { org, threadId: id } } })),
  });
  if (thread.error) return <QueryError error={thread.error} />;
  if (!thread.data) return <Text c="dimmed">Loading…</Text>;
  return (
    <Stack>
      <AnchorLink to="/o/$org/email" params={{ org }} size="sm">
        ← Email
      </AnchorLink>
      <Title order={1} size="h2">
        {thread.data.subject || '(no subject)'}
      </Title>
      {thread.data.messages.map((message) => (
        <Card key={message.id} withBorder data-message-id={message.id}>
          <Stack gap="xs">
            <Group justify="space-between" align="flex-start">
              <Stack gap={2}>
                <Text size="sm" fw={600}>
                  {message.from}
                </Text>
                <Text size="xs" c="dimmed">
                  to {message.to.join(', ')}
                  {message.cc.length > 0 ? `, cc ${message.cc.join(', ')}` : ''} ·{' '}
                  {formatTime(message.sentAt ?? message.createdAt)}
                </Text>
              </Stack>
              <Group gap="xs">
                <Badge variant="outline" tt="none">
                  {message.direction}
                </Badge>
                <StatusBadge status={message.status} />
                {message.actionId && (
                  <AnchorLink to="/o/$org/ledger/$id" params={{ org, id: message.actionId }} size="xs">
                    its action
                  </AnchorLink>
                )}
              </Group>
            </Group>
            {message.statusDetail && (
              <Text size="xs" c="dimmed">
                {message.statusDetail}
              </Text>
            )}
            {/* The frame's page has an opaque origin of its own (its sandbox), so its height cannot be read
                from here: the operator drags the corner to read a long message whole. */}
            <Box
              data-message-frame
              style={{
                resize: 'vertical',
                overflow: 'hidden',
                height: 240,
                minHeight: 100,
                border: '1px solid var(--mantine-color-gray-3)',
                borderRadius: 4,
              }}
            >
              <iframe
                title={`Message from ${message.from}`}
                src={`/orgs/${encodeURIComponent(org)}/email/messages/${message.id}/html`}
                sandbox=""
                referrerPolicy="no-referrer"
                style={{ display: 'block', width: '100%', height: '100%', border: 0 }}
              />
            </Box>
            {message.attachments.length > 0 && (
              <Group gap="xs">
                {message.attachments.map((attachment) =>
                  attachment.status === 'stored' || attachment.status === 'attached' ? (
                    <Anchor
                      key={attachment.id}
                      size="sm"
                      href={`/orgs/${encodeURIComponent(org)}/email/attachments/${attachment.id}`}
                    >
                      {attachment.filename} ({fileSize(attachment.sizeBytes)})
                    </Anchor>
                  ) : (
                    <Text key={attachment.id} size="sm" c="dimmed">
                      {attachment.filename}: {attachment.status}
                      {attachment.error ? ` (${attachment.error})` : ''}
                    </Text>
                  ),
                )}
              </Group>
            )}
            {message.deliveryEvents.length > 0 && (
              <Text size="xs" c="dimmed">
                Delivery: {message.deliveryEvents.map((event) => `${event.type} ${formatTime(event.occurredAt)}`).join(' · ')}
              </Text>
            )}
          </Stack>
        </Card>
      ))}
    </Stack>
  );
}
