import { z } from 'zod';
import { MODEL_PROVIDERS } from '../../db/schema.ts';
import { paginationQuery } from '../../lib/pagination.ts';
import { wholeNumber } from '../../lib/whole-number.ts';
import { agentInput, agentParams, changeNoteSchema } from './agents.schemas.ts';
import { BEHAVIOUR_FIELDS } from './agent-behaviour.ts';

/** A draft: the behaviour fields it changes (the others are the live version's), and why. */
export const versionInput = z
  .object({
    instructions: agentInput.shape.instructions.unwrap().optional(),
    provider: agentInput.shape.provider.unwrap().optional(),
    model: agentInput.shape.model.unwrap().optional(),
    tools: agentInput.shape.tools.unwrap().optional(),
    changeNote: changeNoteSchema,
  })
  .strict();

export const versionSchema = z.object({
  version: z.int(),
  live: z.boolean().describe('New actions run with it'),
  instructions: z.string(),
  provider: z.enum(MODEL_PROVIDERS).nullable(),
  model: z.string().nullable(),
  tools: z.array(z.string()),
  changeNote: z.string().nullable(),
  createdAt: z.date(),
  createdBy: z.uuid().nullable().describe('The member who made it (null: made before versions were kept, or since removed)'),
  lastPublishedAt: z.date().nullable().describe('When it was last made live (null: never published, a draft)'),
  lastReplacedAt: z
    .date()
    .nullable()
    .describe('When another version was made live in its place, the last time it was live (null: live now, or never published)'),
});

export const publicationSchema = z.object({
  version: z.int(),
  previousVersion: z.int().nullable().describe('The version live before (null: the first)'),
  publishedAt: z.date(),
  publishedBy: z.uuid().nullable(),
});

const lineSchema = z.object({ op: z.enum(['add', 'remove', 'keep']), text: z.string() });
export const versionDiffSchema = z.object({
  version: z.int(),
  against: z.int(),
  changes: z.array(
    z.object({
      field: z.enum(BEHAVIOUR_FIELDS),
      from: z.unknown().describe('The value in `against`'),
      to: z.unknown().describe('The value in `version`'),
      lines: z
        .array(lineSchema)
        .optional()
        .describe('For instructions: a line diff from `against` to `version`, every line with what happened to it'),
    }),
  ),
});

const versionNumber = wholeNumber().min(1).max(2_147_483_647);
export const versionParams = agentParams.extend({ version: versionNumber });
export const diffQuery = z.object({ against: versionNumber.describe('The version to compare with') });
export const versionsQuery = paginationQuery;
