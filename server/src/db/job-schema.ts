import type { Generated } from 'kysely';

/** A job's hold on a key of its queue while it runs (jobs/job-leases.repo.ts). */
export interface JobLeasesTable {
  key: string;
  jobId: string;
  attempt: number;
  expiresAt: Date;
  /** A job was put off by this lease: its release makes that job due. */
  waitedOn: Generated<boolean>;
}
