import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import { ledgerDetail, ledgerQuery, ledgerRow } from './ledger.schemas.ts';
import type { LedgerService } from './ledger.service.ts';
import { orgOf } from '../../lib/request-context.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema };

export function ledgerRoutes(deps: { ledger: LedgerService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['ledger'], security: sessionSecurity };
    app.get(
      '/orgs/:org/ledger',
      {
        schema: {
          operationId: 'listLedger',
          ...common,
          summary: 'Actions and deliveries, newest first',
          params: orgParams,
          querystring: ledgerQuery,
          response: { 200: z.object({ rows: z.array(ledgerRow), nextCursor: z.string().nullable() }), ...errors },
        },
        preHandler,
      },
      async (request) => deps.ledger.list(orgOf(request).id, request.query),
    );
    app.get(
      '/orgs/:org/ledger/:id',
      {
        schema: {
          operationId: 'getLedgerRow',
          ...common,
          summary: 'One ledger row, by eventId or actionId',
          params: orgParams.extend({ id: z.uuid() }),
          response: { 200: ledgerDetail, ...errors },
        },
        preHandler,
      },
      async (request) => deps.ledger.get(orgOf(request).id, request.params.id),
    );
  };
}
