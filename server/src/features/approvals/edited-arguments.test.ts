import { describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../agents/tool-registry.ts';
import { checkEditedArguments } from './edited-arguments.ts';

/** An MCP tool as its server lists it: a JSON Schema that the server checks itself, and that we check an edit against. */
const mcpTool = (inputJsonSchema: Record<string, unknown>): ToolDefinition => ({
  name: 'orders__refund_order',
  description: 'Refund an order',
  inputJsonSchema,
  execute: async () => ({}),
});
const noRules = { argumentRules: [], source: 'webhook' as const };
const refusal = (tool: ToolDefinition, args: Record<string, unknown>) => {
  try {
    checkEditedArguments(tool, tool.name, args, noRules);
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
};

describe("an approver's edited arguments against an MCP tool's JSON Schema", () => {
  const strict = mcpTool({
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    properties: {
      orderId: { type: 'string' },
      amount: { type: 'number' },
      address: { type: 'object', properties: { zip: { type: 'string' } }, required: ['zip'], additionalProperties: false },
    },
    required: ['orderId', 'amount'],
    additionalProperties: false,
  });

  it('names the field that is wrong, missing or unknown, at any depth', () => {
    expect(refusal(strict, { orderId: 'A-1', amount: 'lots' })).toBe('body/arguments/amount must be number');
    expect(refusal(strict, { orderId: 'A-1' })).toBe('body/arguments/amount is required');
    expect(refusal(strict, { orderId: 'A-1', amount: 5, note: 'x' })).toBe(
      "body/arguments/note is not in the tool's input schema",
    );
    expect(refusal(strict, { orderId: 'A-1', amount: 5, address: {} })).toBe('body/arguments/address/zip is required');
    expect(refusal(strict, { orderId: 'A-1', amount: 5, address: { zip: '1', floor: 2 } })).toBe(
      "body/arguments/address/floor is not in the tool's input schema",
    );
  });

  it('says what is wrong with the arguments as a whole without a dangling slash', () => {
    expect(refusal(mcpTool({ type: 'object', minProperties: 3 }), { a: 1 })).toBe(
      'body/arguments must NOT have fewer than 3 properties',
    );
  });

  it('lets valid arguments through, and any arguments when the schema cannot be read', () => {
    expect(refusal(strict, { orderId: 'A-1', amount: 5 })).toBeUndefined();
    expect(refusal(mcpTool({ type: 'object', properties: { a: { $ref: '#/nowhere' } } }), { a: 1 })).toBeUndefined();
  });
});
