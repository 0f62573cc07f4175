import { zodResolver } from '@hookform/resolvers/zod';
import { Alert, Button, Card, Code, Group, List, PasswordInput, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import { type Answer, api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { formatTime, keepSavedHint } from '../../lib/format';
import { pageNotices } from '../../lib/notices';
import { useOrgSlug } from '../../lib/org';
import { keys } from '../../lib/queries';

const botToken = z
  .string()
  .trim()
  .regex(/^xoxb-[A-Za-z0-9-]+$/, "The app's Bot User OAuth Token (xoxb-...)");
const signingSecret = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9]{16,128}$/, "The app's Signing Secret");
/** With an app connected, an empty token or secret keeps the saved one. */
const slackSchema = (connected: boolean) =>
  z.object({
    botToken: connected ? botToken.or(z.literal('')) : botToken,
    signingSecret: connected ? signingSecret.or(z.literal('')) : signingSecret,
    channel: z
      .string()
      .trim()
      .regex(/^(#?[a-z0-9][a-z0-9._-]{0,79}|[CGD][A-Z0-9]{2,30})$/, 'A channel id (C0123ABC) or name (#approvals)'),
  });
type SlackValues = z.infer<ReturnType<typeof slackSchema>>;
const toBody = ({ botToken, signingSecret, channel }: SlackValues) => ({
  channel,
  ...(botToken && { botToken }),
  ...(signingSecret && { signingSecret }),
});

/**
 * The org's own Slack app, for approvals in Slack: the bot token is checked by Slack (auth.test)
 * before anything is saved; secrets are shown as hints only. A test posts a message in the channel.
 */
export function SlackPage() {
  const org = useOrgSlug();
  const queryClient = useQueryClient();
  const queryKey = [...keys.org(org), 'slack'];
  const path = { params: { path: { org } } };
  const current = useQuery({ queryKey, queryFn: () => unwrap(api.GET('/orgs/{org}/slack', path)) });
  const saved = current.data;
  const connected = saved?.configured ?? false;
  // The channel as saved, to change in place; the token and the secret are never shown again.
  const savedValues = { botToken: '', signingSecret: '', channel: saved?.channel ?? '' };
  const form = useForm<SlackValues>({
    resolver: zodResolver(slackSchema(connected)),
    // The form's defaults too (react-hook-form starts from `values` where no defaultValues are given).
    values: savedValues,
    resetOptions: { keepDirtyValues: true },
  });
  const settled = () => void queryClient.invalidateQueries({ queryKey });
  const { failed, succeeded } = pageNotices('slack');
  const save = useMutation({
    mutationFn: (values: SlackValues) => unwrap(api.PUT('/orgs/{org}/slack', { ...path, body: toBody(values) })),
    onSuccess: (connectedApp) => {
      queryClient.setQueryData(queryKey, connectedApp);
      // Back to the channel as saved, the token and secret fields emptied (not kept as typed, as resetOptions would).
      form.reset(undefined, { keepDirtyValues: false });
      succeeded('Slack app connected');
    },
    onError: failed('Not connected'),
    onSettled: settled,
  });
  const errors = form.formState.errors;
  return (
    <Stack>
      <Title order={1} size="h2">
        Slack
      </Title>
      <Text size="sm" c="dimmed" maw={760}>
        Approvers decide waiting calls in Slack: a rule that posts in Slack puts one message per action in the channel below, with
        Approve, Edit, Send back and Reject. Create a Slack app with the bot scopes chat:write, users:read and users:read.email
        (optionally channels:history, so that a post cut off by a crash is found rather than posted twice), install it, invite it
        to the channel, and turn on Interactivity with the URL shown here.
      </Text>
      {current.error && <QueryError error={current.error} />}
      <SimpleGrid cols={{ base: 1, lg: 2 }}>
        <form onSubmit={form.handleSubmit((values) => save.mutate(values))} noValidate aria-label="Connect a Slack app">
          <Stack>
            <PasswordInput
              label="Bot token"
              placeholder={keepSavedHint(connected ? saved?.botTokenHint : null)}
              autoComplete="off"
              {...form.register('botToken')}
              error={errors.botToken?.message}
            />
            <PasswordInput
              label="Signing secret"
              placeholder={keepSavedHint(connected ? saved?.signingSecretHint : null)}
              autoComplete="off"
              {...form.register('signingSecret')}
              error={errors.signingSecret?.message}
            />
            <TextInput label="Channel" placeholder="C0123ABC" {...form.register('channel')} error={errors.channel?.message} />
            <Group justify="flex-end">
              <Button type="submit" loading={save.isPending}>
                Connect
              </Button>
            </Group>
          </Stack>
        </form>
        {/* Made anew for each app saved: a test's outcome belongs to the app it was sent with. */}
        <ConnectedApp key={saved?.updatedAt ?? 'none'} org={org} saved={saved} onChanged={settled} />
      </SimpleGrid>
    </Stack>
  );
}

type SlackSettings = Answer<'/orgs/{org}/slack', 'get'>;

/** What the test's `readsHistory` means for a post cut off by a crash or by Slack not answering. */
const READS_HISTORY = "the bot reads the channel's history: a message whose post was cut off is found there, not posted twice";
const CANNOT_READ_HISTORY =
  "the bot cannot read the channel's history (optional: add channels:history, or groups:history for a private " +
  'channel): a message whose post was cut off is posted again';

/** The app saved, with its test message and Disconnect; refusals are the page's notices. */
function ConnectedApp({ org, saved, onChanged }: { org: string; saved: SlackSettings | undefined; onChanged: () => void }) {
  const path = { params: { path: { org } } };
  const { failed, succeeded } = pageNotices('slack');
  const test = useMutation({ mutationFn: () => unwrap(api.POST('/orgs/{org}/slack/test', path)) });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/orgs/{org}/slack', path)),
    onSuccess: () => succeeded('Slack app disconnected', 'gray'),
    onError: failed('Not disconnected'),
    onSettled: onChanged,
  });
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Text fw={600}>Connected app</Text>
        {saved?.configured ? (
          <>
            <Text size="sm">
              Workspace {saved.teamName ?? saved.teamId} · channel {saved.channel}
            </Text>
            <Text size="sm" ff="monospace">
              bot token {saved.botTokenHint} · signing secret {saved.signingSecretHint}
            </Text>
            <Text size="xs" c="dimmed">
              Updated {formatTime(saved.updatedAt)}
            </Text>
          </>
        ) : (
          <Text size="sm" c="dimmed">
            Not connected: rules that post in Slack record why nothing was posted.
          </Text>
        )}
        <Text size="sm">Interactivity Request URL:</Text>
        <Code block>{saved?.interactivityUrl}</Code>
        {test.error && <Alert color="red">{test.error.message}</Alert>}
        {test.data && (
          <Alert color="green" title="Test message posted">
            <List size="sm">
              <List.Item>
                in {test.data.channel} of {test.data.team ?? 'the workspace'}
              </List.Item>
              <List.Item>{test.data.readsHistory ? READS_HISTORY : CANNOT_READ_HISTORY}</List.Item>
            </List>
          </Alert>
        )}
        {saved?.configured && (
          <Group>
            <Button variant="default" onClick={() => test.mutate()} loading={test.isPending}>
              Send a test message
            </Button>
            <Button color="red" variant="subtle" onClick={() => remove.mutate()} loading={remove.isPending}>
              Disconnect
            </Button>
          </Group>
        )}
      </Stack>
    </Card>
  );
}
