import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, UpdatedAt } from './schema.ts';

export const EXPERIMENT_STATES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type ExperimentState = (typeof EXPERIMENT_STATES)[number];
export const EXPERIMENT_OUTCOMES = ['same', 'changed', 'failed'] as const;
export type ExperimentOutcome = (typeof EXPERIMENT_OUTCOMES)[number];

/** Which past actions an experiment replays, as it was asked. */
export interface ExperimentSelection {
  actionIds?: string[];
  filter?: { from?: string; to?: string; eventType?: string; status?: string };
  limit: number;
}

/** A candidate version of an agent replayed on past actions (schema.ts lists every table in DB). */
export interface ExperimentsTable {
  id: string;
  orgId: string;
  agentId: string;
  version: number;
  state: ExperimentState;
  liveReadOnlyTools: boolean;
  selection: ColumnType<ExperimentSelection, string, string>;
  /** Why it failed (a budget it reached). */
  error: string | null;
  createdByUserId: string | null;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
  startedAt: Date | null;
  finishedAt: Date | null;
}

type JsonColumn<T> = ColumnType<T | null, string | null | undefined, string | null>;

/** One past action of an experiment: pending until its replay's outcome is stored, once. */
export interface ExperimentResultsTable {
  experimentId: string;
  actionId: string;
  orgId: string;
  position: number;
  state: Generated<'pending' | 'done'>;
  attempts: Generated<number>;
  leaseExpiresAt: Date | null;
  outcome: ExperimentOutcome | null;
  baseline: JsonColumn<Record<string, unknown>>;
  candidate: JsonColumn<Record<string, unknown>>;
  differences: JsonColumn<unknown[]>;
  finishedAt: Date | null;
}
