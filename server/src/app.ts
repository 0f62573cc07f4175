import { approvalLinksRoutes } from './features/approval-mail/approval-links.routes.ts';
import { approvalsRoutes } from './features/actions/approvals.routes.ts';
import { callbacksRoutes } from './features/callbacks/callbacks.routes.ts';
import { modelCredentialsRoutes } from './features/agents/model-credentials.routes.ts';
import { toolPreferencesRoutes } from './features/actions/tool-preferences.routes.ts';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import proxyAddr from '@fastify/proxy-addr';
import { createServer, type IncomingMessage } from 'node:http';
import Fastify, { type FastifyError, type FastifyReply } from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Container } from './container.ts';
import { authRoutes } from './features/auth/auth.routes.ts';
import { oauthRoutes } from './features/auth/oauth/oauth.routes.ts';
import { opsRoutes } from './features/ops/ops.routes.ts';
import { orgsRoutes } from './features/orgs/orgs.routes.ts';
import { threadsRoutes } from './features/threads/threads.routes.ts';
import { agentsRoutes } from './features/agents/agents.routes.ts';
import { createIngestFastPath } from './features/ingest/ingest.fast-path.ts';
import { ingestRoutes } from './features/ingest/ingest.routes.ts';
import { webhooksRoutes } from './features/webhooks/webhooks.routes.ts';
import { ledgerRoutes } from './features/ledger/ledger.routes.ts';
import { usageRoutes } from './features/usage/usage.routes.ts';
import { deliveriesRoutes } from './features/ingest/deliveries.routes.ts';
import { documentsRoutes } from './features/documents/documents.routes.ts';
import { emailIntegrationRoutes } from './features/email/email-integration.routes.ts';
import { emailThreadsRoutes } from './features/email/email-threads.routes.ts';
import { mailWebhookRoutes } from './features/email/mail-webhook.routes.ts';
import { inboxesRoutes } from './features/email/inboxes.routes.ts';
import { eventsRoutes } from './features/events/events.routes.ts';
import { mcpRoutes } from './features/mcp/mcp.routes.ts';
import { createClientErrorHandler } from './lib/client-errors.ts';
import { finishOpenApiDocument } from './lib/openapi.ts';
import { errorResponse } from './lib/error-response.ts';
import { RequestLogController } from './lib/request-log.ts';
import { unstorableText } from './lib/json-input.ts';
import { AppError, type ErrorCode } from './lib/errors.ts';
import { securityHeaderValues, securityHeaders } from './lib/security-headers.ts';
import { createConsoleSite, serviceIndex } from './console-site.ts';

/** Fastify's own 4xx errors, mapped onto our closed set of codes. */
const FASTIFY_ERROR_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
};

function toAppError(error: FastifyError): AppError | undefined {
  if (error instanceof AppError) return error;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const problems = error.validation.map((issue) => `${error.validationContext}${issue.instancePath || ''}: ${issue.message}`);
    return new AppError('validation_failed', problems.join('; '), {
      details: error.validation.map((issue) => ({ path: `${error.validationContext}${issue.instancePath}`, message: issue.message })),
    });
  }
  const mapped = error.code ? FASTIFY_ERROR_CODES[error.code] : undefined;
  if (mapped) return new AppError(mapped, mapped === 'invalid_json' ? 'Request body is not valid JSON' : error.message);
  if (error instanceof SyntaxError && error.statusCode === 400) return new AppError('invalid_json', 'Request body is not valid JSON');
  if (error.statusCode === 404) return new AppError('not_found', error.message);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return new AppError('bad_request', error.message);
  return undefined;
}

/** 5 s, 5 min, 2 h: a configured delay as people write it. */
function humanDuration(ms: number): string {
  const [value, unit] = ms % 3_600_000 === 0 ? [ms / 3_600_000, 'h'] : ms % 60_000 === 0 ? [ms / 60_000, 'min'] : [ms / 1000, 's'];
  return `${value} ${unit}`;
}

/** TRUST_PROXY as one function, for Fastify's `request.ip` and the ingest fast path alike. */
function proxyTrust(trustProxy: Container['config']['trustProxy']): ((address: string, hop: number) => boolean) | undefined {
  if (trustProxy === false) return undefined;
  if (trustProxy === true) return () => true;
  // A hop count trusts that many proxies in front of us (X-Forwarded-For read from the right).
  if (typeof trustProxy === 'number') return (_address, hop) => hop < trustProxy;
  return proxyAddr.compile(trustProxy);
}

/** Builds the HTTP app on a container; never listens (main.ts and the tests do). */
export async function buildApp(container: Container) {
  const { config, metrics } = container;
  const trust = proxyTrust(config.trustProxy);
  const responseHeaders = securityHeaderValues({ hsts: config.isProduction });
  let requestCount = 0;
  const nextRequestId = () => `req-${(requestCount++).toString(36)}`;
  const ingestFastPath = createIngestFastPath({
    ingest: container.services.ingest,
    clientIp: trust
      ? (request: IncomingMessage) => proxyAddr(request, trust)
      : (request: IncomingMessage) => request.socket.remoteAddress ?? '',
    nextRequestId,
    responseHeaders,
    metrics,
    tracing: container.tracing,
    logger: container.logger,
  });
  const app = Fastify({
    loggerInstance: container.logger,
    trustProxy: trust ?? false,
    genReqId: nextRequestId,
    // Ingest posts are answered before Fastify routes them (ingest.fast-path.ts). A client has
    // HTTP_HEADERS_TIMEOUT_SECONDS for its headers and HTTP_REQUEST_TIMEOUT_SECONDS for its whole
    // request on either path, checked every second: a sender that trickles a body holds nothing long.
    serverFactory: (fastifyHandler, options) => {
      const server = createServer(
        {
          ...(options.http as object),
          headersTimeout: config.http.headersTimeoutMs,
          requestTimeout: config.http.requestTimeoutMs,
          connectionsCheckingInterval: 1000,
        },
        (request, response) => {
          if (!ingestFastPath.serve(request, response)) fastifyHandler(request, response);
        },
      );
      server.keepAliveTimeout = (options as { keepAliveTimeout: number }).keepAliveTimeout;
      return server;
    },
    clientErrorHandler: createClientErrorHandler(responseHeaders),
    // Fastify's own answers for a URL it cannot decode or a parameter over its length, in our body.
    frameworkErrors: (error, _request, reply) => {
      const appError =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new AppError('not_found', 'Not found')
          : new AppError('bad_request', 'The URL is not valid: a percent-encoded part is not UTF-8');
      void (reply as FastifyReply).headers(responseHeaders).status(appError.status).send(appError.toBody());
    },
    bodyLimit: 1024 * 1024,
    // Both servers log requests through one function (lib/request-log.ts).
    logController: new RequestLogController(),
    // While closing, requests on open connections get our 503 (the onRequest hook below), not Fastify's body.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  }).withTypeProvider<ZodTypeProvider>();

  // The API speaks JSON; other media types get 415 rather than a confusing validation error.
  app.removeContentTypeParser('text/plain');
  // An empty body is no body, with or without a JSON content type: an operation whose body is
  // optional (its schema has a default) accepts it, any other says what it expected.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') done(null, undefined);
    else parseJson(request, body as string, done);
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.decorateRequest('user', null);
  app.decorateRequest('session', null);
  app.decorateRequest('sessionToken', null);
  app.decorateRequest('sessionSource', null);
  app.decorateRequest('org', null);

  await app.register(cookie);
  app.addHook('onRequest', securityHeaders(responseHeaders));
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    ingestFastPath.close();
    done();
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) {
      reply.header('connection', 'close');
      throw new AppError('not_ready', 'The service is shutting down');
    }
  });
  // An OPTIONS request that is no CORS preflight (no Origin) gets 204, not the plugin's plain-text 400.
  await app.register(cors, { origin: [...container.trustedOrigins], credentials: true, strictPreflight: false });
  await app.register(swagger, {
    openapi: {
      info: { title: 'Agent Platform API', version: '0.1.0', description: 'Hosts AI agents for organizations.' },
      servers: [{ url: config.apiHost }],
      tags: [
        {
          name: 'callbacks',
          description:
            `Signed lifecycle callbacks (schema CallbackEvent). Each delivery is retried ${config.callbacks.retryScheduleMs.map(humanDuration).join(', ')} after a failed ` +
            'attempt (2xx is success; 410 disables the endpoint), and reaches its endpoint in lifecycle order per action.',
        },
      ],
      components: {
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: 'session' },
          bearer: { type: 'http', scheme: 'bearer', description: 'The session token as `Authorization: Bearer <token>`' },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: (input) => finishOpenApiDocument(jsonSchemaTransformObject(input) as never),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // One rule for the text of every route (json-input.ts): params, query and body, before the
  // route's own validation and handlers, so that no NUL or unpaired surrogate reaches a query.
  app.addHook('preValidation', async (request) => {
    // No body is an empty object: an optional body's schema (with a default) takes it, and a required
    // one says which fields it lacks (Fastify would validate `null`: "expected object, received null").
    if (request.body == null && request.method !== 'GET' && request.method !== 'DELETE') request.body = {};
    const problem =
      unstorableText(request.params, 'params') ?? unstorableText(request.query, 'querystring') ?? unstorableText(request.body, 'body');
    if (problem) throw new AppError('validation_failed', problem);
  });

  app.addHook('onResponse', (request, reply, done) => {
    metrics.recordRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, headers, body } = errorResponse(error, request.log, toAppError(error));
    return reply.headers(headers).status(status).send(body);
  });
  // The console, when APP_HOST is this service's own origin and the console is built (npm start builds it).
  const consoleSite = config.appHost === config.apiHost ? createConsoleSite() : undefined;
  if (consoleSite) await app.register(consoleSite.assets);
  else if (config.appHost === config.apiHost) container.logger.warn('The console is not built: run `npm run build -w console` to serve it');
  // `curl /` is often a person's first request: it says where the console and the API's docs are.
  app.get('/', { schema: { hide: true } }, (request, reply) =>
    consoleSite?.wantsPage(request) ? consoleSite.sendPage(reply) : reply.send(serviceIndex(config, consoleSite !== undefined)),
  );
  app.setNotFoundHandler((request, reply) =>
    consoleSite?.wantsPage(request)
      ? consoleSite.sendPage(reply)
      : reply.status(404).send({ error: `Route ${request.method} ${request.url.split('?')[0]} not found`, code: 'not_found' }),
  );

  const { services, middlewares } = container;
  await app.register(opsRoutes({ ops: services.ops, metrics }));
  await app.register(
    authRoutes({
      auth: services.auth,
      oauth: services.oauth,
      passwordReset: services.passwordReset,
      externalAuth: services.externalAuth,
      userLimits: services.userLimits,
      middlewares,
      limits: container.limits,
      isProduction: config.isProduction,
    }),
  );
  await app.register(
    oauthRoutes({
      oauth: services.oauth,
      limits: { codehost: container.limits.codehost, idp: container.limits.idp },
      redirectUris: { codehost: config.codehost?.redirectUri, idp: config.idp?.redirectUri },
      appHost: config.appHost,
      isProduction: config.isProduction,
    }),
  );
  await app.register(orgsRoutes({ orgs: services.orgs, middlewares }));
  await app.register(threadsRoutes({ threads: services.threads, middlewares }));
  const { orgAccess } = container;
  await app.register(agentsRoutes({ agents: services.agents, orgAccess }));
  await app.register(webhooksRoutes({ webhooks: services.webhooks, sendTest: services.sendTest, orgAccess }));
  await app.register(ledgerRoutes({ ledger: services.ledger, orgAccess }));
  await app.register(deliveriesRoutes({ deliveries: services.deliveries, orgAccess }));
  await app.register(ingestRoutes({ fastPath: ingestFastPath }));
  await app.register(documentsRoutes({ documents: services.documents, orgAccess }));
  await app.register(approvalsRoutes({ approvals: services.approvals, orgAccess }));
  await app.register(usageRoutes({ usage: services.usage, budgets: services.budgets, orgAccess }));
  await app.register(approvalLinksRoutes({ links: services.approvalLinks }));
  await app.register(callbacksRoutes({ callbacks: services.callbacks, orgAccess }));
  await app.register(mcpRoutes({ mcpServers: services.mcpServers, orgAccess }));
  await app.register(toolPreferencesRoutes({ toolPreferences: services.toolPreferences, middlewares }));
  await app.register(modelCredentialsRoutes({ modelCredentials: services.modelCredentials, orgAccess }));
  await app.register(emailIntegrationRoutes({ emailIntegration: services.emailIntegration, orgAccess }));
  await app.register(inboxesRoutes({ inboxes: services.inboxes, orgAccess }));
  await app.register(emailThreadsRoutes({ threads: services.emailThreads, orgAccess }));
  await app.register(eventsRoutes({ events: container.orgEvents, orgAccess }));
  await app.register(
    mailWebhookRoutes({ intake: services.mailWebhook, maxBytes: config.email.webhookMaxBytes, tracing: container.tracing }),
  );
  return app;
}
