/** A job's hold on a key of its queue while it runs (jobs/job-leases.repo.ts). */
export interface JobLeasesTable {
  key: string;
  jobId: string;
  attempt: number;
  expiresAt: Date;
}
