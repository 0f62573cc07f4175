import type { DecisionChannel } from '../../db/schema.ts';

/** How a decision was made, as a sentence says it ("approved by ann@acme.test in Slack"): one word list for every channel. */
export const CHANNEL_WORDS: Record<DecisionChannel, string> = {
  console: 'in the console',
  api: 'through the API',
  email_link: 'by an email link',
  email_reply: 'by an email reply',
  slack: 'in Slack',
};
