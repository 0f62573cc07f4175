import { z } from 'zod';
import type { paths } from '../../api/schema';

type LedgerStatus = NonNullable<NonNullable<paths['/orgs/{org}/ledger']['get']['parameters']['query']>['status']>;

/** What the API filters by: an action's status, or the status of a delivery that made no action. */
export const LEDGER_STATUSES = [
  'queued',
  'running',
  'pending_approval',
  'approved',
  'completed',
  'failed',
  'rejected',
  'expired',
  'accepted',
  'buffered',
  'skipped',
  'dead_lettered',
] as const satisfies readonly LedgerStatus[];

/** The ledger's filters live in the URL, so a filtered view can be shared; a bad value is dropped. */
export const ledgerSearchSchema = z.object({
  kind: z.enum(['action', 'delivery']).optional().catch(undefined),
  source: z.enum(['webhook', 'email']).optional().catch(undefined),
  status: z.enum(LEDGER_STATUSES).optional().catch(undefined),
  webhookId: z.uuid().optional().catch(undefined),
  eventType: z.string().max(200).optional().catch(undefined),
  q: z.string().min(1).max(200).optional().catch(undefined),
});
export type LedgerFilters = z.infer<typeof ledgerSearchSchema>;
