import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import { jobLeasesRepo } from './job-leases.repo.ts';
import type { JobHandler } from './registry.ts';

/** A lapsed lease is kept an hour: `/metrics` counts it while its job waits for the retry that takes it over. */
const LAPSED_LEASE_KEPT_SECONDS = 3600;

export function jobLeaseHandlers(deps: { db: Kysely<DB> }): {
  'jobs.purge-lapsed-leases': JobHandler<'jobs.purge-lapsed-leases'>;
} {
  return {
    'jobs.purge-lapsed-leases': () => jobLeasesRepo.purgeLapsed(deps.db, LAPSED_LEASE_KEPT_SECONDS),
  };
}
