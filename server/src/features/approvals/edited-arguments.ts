import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { AppError } from '../../lib/errors.ts';
import { decisiveRule, refusedBy } from '../agents/argument-rules.ts';
import type { ToolDefinition } from '../agents/tool-registry.ts';
import type { DecisionRule } from './approvers.repo.ts';

// Draft 2020-12, what MCP servers' SDKs write (its keywords cover the earlier drafts' common ones).
const ajv = new Ajv2020({ allErrors: false, strict: false, validateFormats: false });
/** MCP tools' schemas, compiled once per schema (a server lists the same schema on every listing). */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 500;

function jsonSchemaProblem(schema: Record<string, unknown>, value: unknown): string | undefined {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    try {
      // Whichever draft it names, it is read as 2020-12 (as the model reads it, without `$schema`).
      const { $schema: _, ...given } = schema;
      validate = ajv.compile(given);
    } catch {
      return undefined; // a schema the validator cannot read: the server checks the arguments itself
    }
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, validate);
  }
  if (validate(value)) return undefined;
  const [error] = validate.errors ?? [];
  if (!error) return ' are not valid';
  // A missing or unknown argument is named as the field it is, at any depth (Ajv says it of the object around it).
  if (error.keyword === 'required') return `${error.instancePath}/${String(error.params.missingProperty)} is required`;
  if (error.keyword === 'additionalProperties')
    return `${error.instancePath}/${String(error.params.additionalProperty)} is not in the tool's input schema`;
  return `${error.instancePath} ${error.message ?? 'is not valid'}`;
}

/**
 * Arguments a person approves in place of the model's: valid for the tool (a built-in tool's own
 * schema; an MCP tool's JSON Schema), and not refused by a `deny` argument rule of the action (its
 * rule's, its inbox's; an `ask` rule is fine: a person is approving them). Throws the 400 or the 422
 * that says why.
 */
export function checkEditedArguments(
  tool: ToolDefinition | undefined,
  toolName: string,
  args: Record<string, unknown>,
  rule: Pick<DecisionRule, 'argumentRules' | 'source'>,
): void {
  if (!tool) throw new AppError('validation_failed', `body/arguments: the tool "${toolName}" is no longer available`);
  if (tool.inputSchema) {
    const parsed = tool.inputSchema.safeParse(args);
    if (!parsed.success) {
      const [issue] = parsed.error.issues;
      throw new AppError('validation_failed', `body/arguments/${issue?.path.join('/') ?? ''}: ${issue?.message ?? 'not valid'}`);
    }
  } else if (tool.inputJsonSchema) {
    const problem = jsonSchemaProblem(tool.inputJsonSchema, args);
    // "/amount must be number", "/orderId is required", or " must be object" (the arguments as a whole).
    if (problem) throw new AppError('validation_failed', `body/arguments${problem}`);
  }
  const refusing = decisiveRule(rule.argumentRules, toolName, args);
  if (refusing?.rule.mode === 'deny')
    throw new AppError('arguments_denied', `${refusedBy(rule.source, refusing)}; the call still waits`);
}
