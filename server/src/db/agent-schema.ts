import type { Generated } from 'kysely';
import type { CreatedAt, JsonOf, ModelProvider, UpdatedAt } from './schema.ts';
import type { BudgetColumn } from './usage-schema.ts';

export interface AgentsTable {
  id: string;
  orgId: string;
  name: string;
  /** The version new actions run with (agent_versions). */
  liveVersion: Generated<number>;
  budget: BudgetColumn;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

/** What an agent does, as an immutable numbered version: the fields that change what a run does. */
export interface AgentVersionsTable {
  agentId: string;
  version: number;
  orgId: string;
  instructions: string;
  provider: ModelProvider | null;
  model: string | null;
  tools: JsonOf<string[]>;
  changeNote: string | null;
  createdByUserId: string | null;
  createdAt: CreatedAt;
}

/** Each time a version was made live (rolling back is publishing an older one). */
export interface AgentPublicationsTable {
  id: string;
  agentId: string;
  orgId: string;
  version: number;
  previousVersion: number | null;
  publishedByUserId: string | null;
  publishedAt: CreatedAt;
}
