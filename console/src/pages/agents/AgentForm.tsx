import type { Refusable } from '../../components/FormParts';
import { zodResolver } from '@hookform/resolvers/zod';
import { Button, Checkbox, Group, Select, SimpleGrid, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Controller, useForm } from 'react-hook-form';
import { z } from 'zod';
import { toolsQuery } from '../../lib/queries';

export const PROVIDERS = ['openai-compatible', 'openai', 'anthropic'] as const;

const agentSchema = z.object({
  name: z.string().trim().min(1, 'Name it').max(200),
  instructions: z.string().max(50_000),
  provider: z.enum(PROVIDERS).nullable(),
  model: z.string().max(200),
  tools: z.array(z.string()),
  changeNote: z.string().max(2000),
});
export type AgentValues = z.infer<typeof agentSchema>;
export const emptyAgent: AgentValues = { name: '', instructions: '', provider: null, model: '', tools: [], changeNote: '' };
/** The form's values of an agent as the API gives it. */
export const agentValues = (agent: Omit<AgentValues, 'model' | 'changeNote'> & { model: string | null }): AgentValues => ({
  name: agent.name,
  instructions: agent.instructions,
  provider: agent.provider,
  model: agent.model ?? '',
  tools: agent.tools,
  changeNote: '',
});
/** The API's body: an empty model is the server's default (null), an empty note none. */
export const toAgentBody = (values: AgentValues) => ({
  ...values,
  model: values.model.trim() || null,
  changeNote: values.changeNote.trim() || null,
});
/** A draft: what the agent does (not its name), for the next version. */
export const toDraftBody = (values: AgentValues) => {
  const { name: _, ...body } = toAgentBody(values);
  return body;
};

/** An agent: its instructions, its model (or the server's), and the tools it may call. */
export function AgentForm(
  props: {
    org: string;
    initial: AgentValues;
    submitLabel: string;
    busy: boolean;
    onSubmit: (values: AgentValues) => void;
    /** Saves what it does as the next version without making it live (an existing agent). */
    onDraft?: (values: AgentValues) => void;
  } & Refusable,
) {
  const { data: tools = [] } = useQuery(toolsQuery(props.org));
  const form = useForm<AgentValues>({ resolver: zodResolver(agentSchema), defaultValues: props.initial });
  const errors = form.formState.errors;
  return (
    <form onSubmit={form.handleSubmit(props.onSubmit)} noValidate>
      <Stack>
        <TextInput label="Name" {...form.register('name')} error={errors.name?.message} />
        <Textarea
          label="Instructions"
          description="What the agent does and how: its system prompt."
          autosize
          minRows={4}
          {...form.register('instructions')}
        />
        <SimpleGrid cols={2}>
          <Controller
            control={form.control}
            name="provider"
            render={({ field }) => (
              <Select
                label="Model provider"
                placeholder="The server's default"
                clearable
                data={[...PROVIDERS]}
                value={field.value}
                onChange={(value) => field.onChange(value)}
              />
            )}
          />
          <TextInput label="Model" placeholder="The server's default" {...form.register('model')} />
        </SimpleGrid>
        <Controller
          control={form.control}
          name="tools"
          render={({ field }) => (
            <Checkbox.Group label="Tools it may use" value={field.value} onChange={field.onChange}>
              <Stack gap="xs" mt="xs">
                {tools.map((tool) => (
                  <Checkbox
                    key={tool.name}
                    value={tool.name}
                    label={tool.name}
                    description={
                      <Text size="xs">
                        {tool.server && `${tool.server.name} (MCP)${tool.server.annotations.readOnlyHint ? ', read-only' : ''}: `}
                        {tool.description}
                      </Text>
                    }
                  />
                ))}
              </Stack>
            </Checkbox.Group>
          )}
        />
        <TextInput
          label="Change note"
          description="Why: kept with the version this change makes."
          {...form.register('changeNote')}
          error={errors.changeNote?.message}
        />
        {props.refusal}
        <Group justify="flex-end">
          {props.onDraft && (
            <Button variant="default" loading={props.busy} onClick={form.handleSubmit(props.onDraft)}>
              Save as draft
            </Button>
          )}
          <Button type="submit" loading={props.busy}>
            {props.submitLabel}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
