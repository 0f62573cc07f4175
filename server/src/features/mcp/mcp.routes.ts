import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf } from '../../lib/request-context.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import { mcpServerInput, mcpServerParams, mcpServerPatch, mcpServerSchema, mcpTestResultSchema } from './mcp.schemas.ts';
import type { McpServersService } from './mcp-servers.service.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema, 422: errorSchema };
const UNREACHABLE =
  "422 `mcp_unreachable`, `mcp_unauthorized` or `mcp_protocol` (with the server's own words) when the server cannot be " +
  'reached, refuses the credentials or speaks no MCP; nothing is saved then.';

export function mcpRoutes(deps: { mcpServers: McpServersService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['mcp'], security: sessionSecurity };
    const base = '/orgs/:org/mcp-servers';

    app.post(
      base,
      {
        schema: {
          operationId: 'createMcpServer',
          ...common,
          summary: 'Connect an MCP server: its tools are listed and offered to agents as `<name>__<tool>`',
          description: UNREACHABLE,
          params: orgParams,
          body: mcpServerInput,
          response: { 201: mcpServerSchema, ...errors },
        },
        preHandler,
      },
      async (request, reply) => reply.status(201).send(await deps.mcpServers.create(orgOf(request).id, request.body)),
    );
    app.post(
      `${base}/test`,
      {
        schema: {
          operationId: 'testMcpServer',
          ...common,
          summary: 'The connection test, before saving: the server and the tools agents would be offered',
          description: UNREACHABLE,
          params: orgParams,
          body: mcpServerInput,
          response: { 200: mcpTestResultSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.mcpServers.test(request.body),
    );
    app.get(
      base,
      {
        schema: {
          operationId: 'listMcpServers',
          ...common,
          summary: "The org's MCP servers with their tools",
          params: orgParams,
          response: { 200: z.object({ mcpServers: z.array(mcpServerSchema) }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ mcpServers: await deps.mcpServers.list(orgOf(request).id) }),
    );
    app.get(
      `${base}/:id`,
      {
        schema: {
          operationId: 'getMcpServer',
          ...common,
          summary: 'One MCP server, with its tools and when they were last listed',
          params: mcpServerParams,
          response: { 200: mcpServerSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.mcpServers.get(orgOf(request).id, request.params.id),
    );
    app.patch(
      `${base}/:id`,
      {
        schema: {
          operationId: 'updateMcpServer',
          ...common,
          summary: 'Change an MCP server (headers are replaced as a whole); it is connected to and listed again before saving',
          description: UNREACHABLE,
          params: mcpServerParams,
          body: mcpServerPatch,
          response: { 200: mcpServerSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.mcpServers.update(orgOf(request).id, request.params.id, request.body),
    );
    app.post(
      `${base}/:id/refresh`,
      {
        schema: {
          operationId: 'refreshMcpServer',
          ...common,
          summary: "List the server's tools again",
          description: UNREACHABLE,
          params: mcpServerParams,
          response: { 200: mcpServerSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.mcpServers.refresh(orgOf(request).id, request.params.id),
    );
    app.delete(
      `${base}/:id`,
      {
        schema: {
          operationId: 'deleteMcpServer',
          ...common,
          summary: 'Disconnect an MCP server: its tools are no longer offered',
          params: mcpServerParams,
          response: { 204: z.null(), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.mcpServers.remove(orgOf(request).id, request.params.id);
        return reply.status(204).send(null);
      },
    );
  };
}
