import { Badge } from '@mantine/core';
import { statusColor } from '../lib/format';

export function StatusBadge({ status }: { status: string | null | undefined }) {
  if (!status) return null;
  return (
    // A coloured dot beside dark text: readable at any status colour (light badges fail contrast).
    // Never cut short ("PENDING APPR…"): the table gives the cell the badge's full width.
    <Badge
      color={statusColor(status)}
      variant="dot"
      radius="sm"
      tt="none"
      styles={{ root: { overflow: 'visible' }, label: { overflow: 'visible' } }}
    >
      {status.replaceAll('_', ' ')}
    </Badge>
  );
}
