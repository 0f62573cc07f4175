import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { fastifySSE } from '@fastify/sse';
import { AppError } from '../../lib/errors.ts';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf } from '../../lib/request-context.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import type { OrgChange, OrgEvents } from './org-events.ts';

/**
 * Whether an Accept header admits an event stream: none, a wildcard, or text/event-stream, with a
 * quality above 0 (RFC 9110 12.5.1). The plugin's own refusal has a body outside our error model.
 */
function acceptsEventStream(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(',').some((range) => {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const q = params.find((param) => param.startsWith('q='));
    return ['text/event-stream', 'text/*', '*/*'].includes(type) && (q === undefined || Number(q.slice(2)) > 0);
  });
}

/** A comment line this often keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 25_000;

const DESCRIPTION = `Server-Sent Events: \`ledger\` (ledger rows changed; data \`{ "ids": [row id, ...] }\`) and \`approval\`
(approvals of these actions changed; data \`{ "ids": [action id, ...] }\`). \`ids\` is null when too many changed at once:
refetch everything. Each event has an id; reconnecting with \`Last-Event-ID\` replays what was missed, or sends \`resync\`
(refetch everything) when that is no longer possible. Changes are announced once committed, whichever process made them.`;

export function eventsRoutes(deps: { events: OrgEvents; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    await app.register(fastifySSE, { heartbeatInterval: HEARTBEAT_MS });
    // Open streams would hold a closing server forever (they are never idle): end them first.
    const open = new Set<FastifyReply>();
    app.addHook('preClose', async () => {
      for (const reply of open) reply.sse.close();
    });

    app.get(
      '/orgs/:org/events',
      {
        // Negotiated here (acceptsEventStream): a refusal is a 406 in our error model.
        sse: 'manual',
        schema: {
          operationId: 'streamOrgEvents',
          tags: ['events'],
          summary: "A live stream of the org's ledger and approval changes (the console's)",
          description: DESCRIPTION,
          security: sessionSecurity,
          params: orgParams,
          response: { 401: errorSchema, 403: errorSchema, 404: errorSchema, 406: errorSchema },
        },
        preHandler: deps.orgAccess('Admin'),
      },
      async (request, reply) => {
        if (!acceptsEventStream(request.headers.accept)) {
          throw new AppError('not_acceptable', 'This endpoint sends only text/event-stream: ask for it in Accept');
        }
        const send = (change: OrgChange | 'resync') =>
          void reply.sse
            .send(
              change === 'resync'
                ? { event: 'resync', data: {} }
                : { id: deps.events.eventId(change), event: change.kind, data: { ids: change.ids } },
            )
            .catch(() => {});
        const { missed, stop } = await deps.events.subscribe(orgOf(request).id, send, reply.sse.lastEventId);
        open.add(reply);
        reply.sse.onClose(() => {
          stop();
          open.delete(reply);
        });
        reply.sse.keepAlive();
        // Headers now, not with the first event: the browser's EventSource is open (and says Live) at once.
        reply.sse.sendHeaders();
        reply.raw.flushHeaders();
        if (missed === 'resync') send('resync');
        else for (const change of missed) send(change);
      },
    );
  };
}
