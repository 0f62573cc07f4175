import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import { agentsRepo } from './agents.repo.ts';
import { type Behaviour, agentVersionsRepo } from './agent-versions.repo.ts';
import type { ToolRegistry } from './tool-registry.ts';

/** The fields of an agent that make a version: what changes what a run does. */
export const BEHAVIOUR_FIELDS = ['instructions', 'provider', 'model', 'tools'] as const;
export type BehaviourField = (typeof BEHAVIOUR_FIELDS)[number];

export const behaviourOf = (source: Behaviour): Behaviour => ({
  instructions: source.instructions,
  provider: source.provider,
  model: source.model,
  tools: source.tools,
});

/** `base` with the fields `changes` gives (a field left out, or undefined, is kept). */
const withChanges = (base: Behaviour, changes: Partial<Behaviour>): Behaviour => ({
  instructions: changes.instructions ?? base.instructions,
  provider: changes.provider === undefined ? base.provider : changes.provider,
  model: changes.model === undefined ? base.model : changes.model,
  tools: changes.tools ?? base.tools,
});

/** The behaviour fields that differ between two versions, in a fixed order. */
export const changedFields = (from: Behaviour, to: Behaviour): BehaviourField[] =>
  BEHAVIOUR_FIELDS.filter((field) => JSON.stringify(from[field]) !== JSON.stringify(to[field]));

/** An agent may name only tools the org has: a misspelt one would be dropped at run time, silently. */
export async function requireKnownTools(
  tools: Pick<ToolRegistry, 'forOrg'>,
  orgId: string,
  names: string[] | undefined,
  where = 'body/tools',
): Promise<void> {
  if (!names?.length) return;
  const orgTools = await tools.forOrg(orgId);
  const unknown = names.filter((name) => !orgTools.has(name));
  if (unknown.length === 0) return;
  const known = [...orgTools.keys()].sort();
  throw new AppError(
    'validation_failed',
    `${where}: unknown tool${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => `"${name}"`).join(', ')}; ` +
      `the tools are: ${known.join(', ')}`,
  );
}

/** Makes `version` of a locked agent live and records who did it (nothing when it is live already). */
export async function publish(
  trx: Kysely<DB>,
  agent: { orgId: string; agentId: string; liveVersion: number | null },
  version: number,
  userId: string,
): Promise<void> {
  if (agent.liveVersion === version) return;
  if (agent.liveVersion !== null) await agentsRepo.update(trx, agent.orgId, agent.agentId, { liveVersion: version });
  await agentVersionsRepo.recordPublication(trx, {
    id: randomUUID(),
    agentId: agent.agentId,
    orgId: agent.orgId,
    version,
    previousVersion: agent.liveVersion,
    publishedByUserId: userId,
  });
}

/**
 * Stores the agent's next version (the agent is locked: numbers are given one at a time) and, when
 * asked, makes it live. `liveVersion` is null for a new agent (its version 1 is live as it is made).
 */
export async function writeVersion(
  trx: Kysely<DB>,
  agent: { orgId: string; agentId: string; liveVersion: number | null },
  behaviour: Behaviour,
  made: { changeNote: string | null; userId: string; live: boolean },
): Promise<number> {
  const version = (await agentVersionsRepo.latest(trx, agent.agentId)) + 1;
  await agentVersionsRepo.insert(trx, {
    agentId: agent.agentId,
    orgId: agent.orgId,
    version,
    ...behaviourOf(behaviour),
    changeNote: made.changeNote,
    createdByUserId: made.userId,
  });
  if (made.live) await publish(trx, agent, version, made.userId);
  return version;
}

/**
 * Locks the agent and stores its next version: the live one with `changes`. Made live, it is stored
 * only when it differs from the live one (a PATCH that changes nothing makes none); a draft only when
 * no version does the same (409 names the one that does). Returns the agent's version after it, or
 * undefined when the org has no such agent.
 */
export async function nextVersion(
  trx: Kysely<DB>,
  agent: { orgId: string; agentId: string },
  changes: Partial<Behaviour>,
  made: { changeNote: string | null; userId: string; live: boolean },
): Promise<number | undefined> {
  const locked = await agentsRepo.lock(trx, agent.orgId, agent.agentId);
  const live = locked && (await agentsRepo.find(trx, agent.orgId, agent.agentId));
  if (!live) return undefined;
  const behaviour = withChanges(live, changes);
  if (made.live && changedFields(live, behaviour).length === 0) return live.liveVersion;
  const same = made.live ? undefined : await agentVersionsRepo.sameAs(trx, agent.agentId, behaviour);
  if (same !== undefined)
    throw new AppError(
      'conflict',
      same === live.liveVersion
        ? `The draft changes nothing: version ${same}, the live one, has the same instructions, model and tools`
        : `The draft changes nothing: version ${same} has the same instructions, model and tools (publish it to make it live)`,
    );
  return writeVersion(trx, { ...agent, liveVersion: locked.liveVersion }, behaviour, made);
}
