import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import type { JobRunner } from '../jobs/job-runner.ts';
import type { Clock } from '../lib/clock.ts';
import type { SecretBox } from '../lib/crypto.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { CommitNotice, ProcessBus } from '../lib/process-bus.ts';
import type { Tracing } from '../lib/tracing.ts';

/** What every part of the composition root is built on: one of each per process. */
export interface Shared {
  config: Config;
  database: Database;
  db: Database['db'];
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  box: SecretBox;
  bus: ProcessBus;
  jobs: JobRunner;
  /** OpenTelemetry traces (a no-op tracer when no OTLP endpoint is set). */
  tracing: Tracing;
  /** After a transition that may have written callbacks commits: the dispatchers wake up. */
  announce: () => void;
  /** After runnable actions commit: the run dispatchers claim them (`sent`: the commit told other processes). */
  wakeRunners: (sent?: CommitNotice) => void;
}
