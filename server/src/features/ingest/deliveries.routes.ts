import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import type { DeliveriesService } from './deliveries.service.ts';
import { orgOf } from '../../lib/request-context.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema };
const replayed = z.object({
  status: z.string(),
  eventId: z.uuid(),
  actionId: z.uuid().optional(),
  alreadyExists: z.boolean().optional(),
  reason: z.string().optional(),
});

/** The operator's replay of a recorded delivery (shown in the ledger, hence its tag). */
export function deliveriesRoutes(deps: { deliveries: DeliveriesService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/orgs/:org/deliveries/:eventId/replay',
      {
        schema: {
          operationId: 'replayDelivery',
          tags: ['ledger'],
          security: sessionSecurity,
          summary: "Run a delivery through today's configuration again",
          params: orgParams.extend({ eventId: z.uuid() }),
          response: { 200: replayed, ...errors },
        },
        preHandler: deps.orgAccess('Admin'),
      },
      async (request) => deps.deliveries.replay(orgOf(request).id, request.params.eventId),
    );
  };
}
