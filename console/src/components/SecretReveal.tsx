import { ActionIcon, Alert, Button, Code, CopyButton, Group, Stack, Text, Tooltip } from '@mantine/core';
import { IconCheck, IconCopy } from '@tabler/icons-react';
import { Dialog } from './Dialog';

export interface RevealedValue {
  label: string;
  value: string;
}

function CopyField({ label, value }: RevealedValue) {
  return (
    <Stack gap={4}>
      <Text size="sm" fw={600}>
        {label}
      </Text>
      <Group gap="xs" wrap="nowrap">
        <Code style={{ flex: 1, wordBreak: 'break-all' }} data-revealed={label}>
          {value}
        </Code>
        <CopyButton value={value}>
          {({ copied, copy }) => (
            <Tooltip label={copied ? 'Copied' : 'Copy'} withArrow>
              <ActionIcon variant="default" onClick={copy} aria-label={`Copy ${label.toLowerCase()}`}>
                {copied ? <IconCheck size={16} aria-hidden /> : <IconCopy size={16} aria-hidden />}
              </ActionIcon>
            </Tooltip>
          )}
        </CopyButton>
      </Group>
    </Stack>
  );
}

/**
 * A secret the API shows once (on create or rotate): copy it now, it cannot be shown again. It stays
 * in view while the dialog fades.
 */
export function SecretReveal({ title, values, onClose }: { title: string; values: RevealedValue[] | null; onClose: () => void }) {
  return (
    <Dialog value={values} onClose={onClose} title={() => title} size="lg" closeOnClickOutside={false}>
      {(shown) => (
        <Stack>
          <Alert color="yellow" title="Shown only this once">
            Copy the secret now and store it where your sending system reads it. It is stored encrypted and cannot be shown again;
            if it is lost, rotate it.
          </Alert>
          {shown.map((value) => (
            <CopyField key={value.label} {...value} />
          ))}
          <Group justify="flex-end">
            <Button onClick={onClose}>I have copied it</Button>
          </Group>
        </Stack>
      )}
    </Dialog>
  );
}
