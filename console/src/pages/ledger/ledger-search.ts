import { z } from 'zod';

/** The ledger's filters live in the URL, so a filtered view can be shared; a bad value is dropped. */
export const ledgerSearchSchema = z.object({
  kind: z.enum(['action', 'delivery']).optional().catch(undefined),
  source: z.enum(['webhook', 'email']).optional().catch(undefined),
  status: z.string().max(50).optional().catch(undefined),
  webhookId: z.uuid().optional().catch(undefined),
  eventType: z.string().max(200).optional().catch(undefined),
  q: z.string().min(1).max(200).optional().catch(undefined),
});
export type LedgerFilters = z.infer<typeof ledgerSearchSchema>;
