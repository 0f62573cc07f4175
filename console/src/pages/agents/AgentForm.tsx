import { SubmitRow } from '../../components/FormParts';
import { zodResolver } from '@hookform/resolvers/zod';
import { Checkbox, Select, SimpleGrid, Stack, Text, Textarea, TextInput } from '@mantine/core';
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
});
export type AgentValues = z.infer<typeof agentSchema>;
export const emptyAgent: AgentValues = { name: '', instructions: '', provider: null, model: '', tools: [] };
/** The API's body: an empty model is the server's default (null). */
export const toAgentBody = (values: AgentValues) => ({ ...values, model: values.model.trim() || null });

/** An agent: its instructions, its model (or the server's), and the tools it may call. */
export function AgentForm(props: {
  org: string;
  initial: AgentValues;
  submitLabel: string;
  busy: boolean;
  onSubmit: (values: AgentValues) => void;
}) {
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
        <SubmitRow label={props.submitLabel} busy={props.busy} />
      </Stack>
    </form>
  );
}
