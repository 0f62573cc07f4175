const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export const formatTime = (iso: string | null | undefined) => (iso ? dateTime.format(new Date(iso)) : '—');

/** "in 3 min", "2 h ago": how far an instant is from now. */
export function relativeTime(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  const [value, unit] =
    abs < 60
      ? [abs, 's']
      : abs < 3600
        ? [Math.round(abs / 60), 'min']
        : abs < 86_400
          ? [Math.round(abs / 3600), 'h']
          : [Math.round(abs / 86_400), 'd'];
  return seconds >= 0 ? `in ${value} ${unit}` : `${value} ${unit} ago`;
}

/** An action as its sender named it, and as the approval emails and Slack messages name it: "order.refund_requested (r-250)". */
export const actionName = (action: { eventType: string; externalId: string | null }) =>
  action.externalId ? `${action.eventType} (${action.externalId})` : action.eventType;

const integer = new Intl.NumberFormat('en');
/** "1 call", "150,000 tokens": a count with its noun, singular for one. */
export const counted = (n: number, noun: string) => `${integer.format(n)} ${n === 1 ? noun : `${noun}s`}`;

const oneDecimal = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });
/** "13 bytes", "4 KB", "2.5 MB": a size as a person reads it (13 bytes is not "1 KB"). */
export function fileSize(bytes: number): string {
  if (bytes < 1024) return counted(bytes, 'byte');
  if (bytes < 1024 * 1024) return `${integer.format(Math.round(bytes / 1024))} KB`;
  return `${oneDecimal.format(bytes / (1024 * 1024))} MB`;
}

// Characters JSON.stringify leaves as they are but nobody sees, or that reorder the text after them
// (U+202E shows "fdp.exe" as "exe.pdf"). They occur only inside strings, so their escapes are the same JSON.
const HIDDEN_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/** Indented JSON in which every character is seen: what an approver reads is what runs. */
export const prettyJson = (value: unknown) =>
  value === undefined
    ? ''
    : JSON.stringify(value, null, 2).replace(HIDDEN_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);

const STATUS_COLORS: Record<string, string> = {
  completed: 'green',
  succeeded: 'green',
  accepted: 'green',
  approved: 'teal',
  running: 'blue',
  queued: 'blue',
  pending: 'yellow',
  pending_approval: 'orange',
  buffered: 'gray',
  failed: 'red',
  rejected: 'red',
  dead_lettered: 'red',
  expired: 'gray',
  cancelled: 'gray',
  same: 'green',
  changed: 'orange',
  sent_back: 'violet',
};
export const statusColor = (status: string | null | undefined) => STATUS_COLORS[status ?? ''] ?? 'gray';

/** US dollars as people read them: cents, or the first digits that matter below a cent; `unknown` without a price. */
export const usd = (value: number | null) =>
  value === null ? 'unknown' : value < 0.01 && value > 0 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;

/** An argument rule's test and mode as the ledger and the rules table say it: "/amount gt 100 → ask". */
export const describeArgumentRule = (rule: { path: string; op: string; value?: unknown; mode: string }) =>
  `${rule.path || '/'} ${rule.op}${rule.value === undefined ? '' : ` ${JSON.stringify(rule.value)}`} → ${rule.mode}`;

/**
 * The model an agent runs on, as the server picks it: the agent's own provider and model where it names
 * them, the server's (MODEL_PROVIDER, MODEL_NAME) where it does not.
 */
export function agentModel({ provider, model }: { provider: string | null; model: string | null }): string {
  if (provider && model) return `${provider} ${model}`;
  if (model) return `${model} on the server's provider`;
  if (provider) return `${provider} with the server's model name`;
  return "the server's default model";
}

/** The placeholder of a secret's field once one is saved: its hint, and that an empty field keeps it. */
export const keepSavedHint = (hint: string | null | undefined) => (hint ? `Saved (${hint}): leave empty to keep it` : undefined);
