import cookie from '@fastify/cookie';
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
import { createIngestFastPath, type IngestFastPath } from './features/ingest/ingest.fast-path.ts';
import { createClientErrorHandler } from './lib/client-errors.ts';
import { corsHeaders } from './lib/cors.ts';
import { finishOpenApiDocument } from './lib/openapi.ts';
import { errorResponse } from './lib/error-response.ts';
import { RequestLogController } from './lib/request-log.ts';
import { deferredRequestLogger } from './lib/request-logger.ts';
import { unstorableText } from './lib/json-input.ts';
import { AppError, type ErrorCode } from './lib/errors.ts';
import { securityHeaderValues, securityHeaders } from './lib/security-headers.ts';
import { createConsoleSite, serviceIndex } from './console-site.ts';
import { registerRoutes } from './app-routes.ts';

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
    // The body itself (an unknown key, not an object) has the path "/": named "body", not "body/".
    const pathOf = (issue: { instancePath: string }) =>
      `${error.validationContext}${issue.instancePath === '/' ? '' : issue.instancePath}`;
    const problems = error.validation.map((issue) => `${pathOf(issue)}: ${issue.message}`);
    return new AppError('validation_failed', problems.join('; '), {
      details: error.validation.map((issue) => ({ path: pathOf(issue), message: issue.message })),
    });
  }
  const mapped = error.code ? FASTIFY_ERROR_CODES[error.code] : undefined;
  if (mapped) return new AppError(mapped, mapped === 'invalid_json' ? 'Request body is not valid JSON' : error.message);
  if (error instanceof SyntaxError && error.statusCode === 400)
    return new AppError('invalid_json', 'Request body is not valid JSON');
  if (error.statusCode === 404) return new AppError('not_found', error.message);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return new AppError('bad_request', error.message);
  return undefined;
}

/** 5 s, 5 min, 2 h: a configured delay as people write it. */
function humanDuration(ms: number): string {
  const [value, unit] =
    ms % 3_600_000 === 0 ? [ms / 3_600_000, 'h'] : ms % 60_000 === 0 ? [ms / 60_000, 'min'] : [ms / 1000, 's'];
  return `${value} ${unit}`;
}

type ProxyTrust = (address: string, hop: number) => boolean;

/** TRUST_PROXY as one function, for Fastify's `request.ip` and the ingest fast path alike. */
function proxyTrust(trustProxy: Container['config']['trustProxy']): ProxyTrust | undefined {
  if (trustProxy === false) return undefined;
  if (trustProxy === true) return () => true;
  // A hop count trusts that many proxies in front of us (X-Forwarded-For read from the right).
  if (typeof trustProxy === 'number') return (_address, hop) => hop < trustProxy;
  return proxyAddr.compile(trustProxy);
}

/** The Fastify instance: its HTTP server hands ingest posts to their fast path, with our limits and error bodies. */
function createFastify(
  container: Container,
  http: {
    trust: ProxyTrust | undefined;
    responseHeaders: Record<string, string>;
    nextRequestId: () => string;
    ingestFastPath: IngestFastPath;
  },
) {
  const { config } = container;
  const { trust, responseHeaders, nextRequestId, ingestFastPath } = http;
  return Fastify({
    loggerInstance: container.logger,
    childLoggerFactory: deferredRequestLogger(container.logger),
    // Registering the plugins reads files (the API docs' UI): on a loaded machine that took over
    // Fastify's default of 10 s, and the process failed to start instead of starting late.
    pluginTimeout: 60_000,
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
}

export type HttpApp = ReturnType<typeof createFastify>;

/** JSON in, validated by the routes' zod schemas; the request's parts that routes and hooks fill in. */
function speakJson(app: HttpApp): void {
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
}

/** Security headers, the 503 while closing, CORS for the trusted origins. */
async function guard(
  app: HttpApp,
  container: Container,
  http: { responseHeaders: Record<string, string>; ingestFastPath: IngestFastPath },
) {
  const { responseHeaders, ingestFastPath } = http;
  await app.register(cookie);
  app.addHook('onRequest', securityHeaders(responseHeaders));
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    ingestFastPath.close();
    done();
  });
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    done(new AppError('not_ready', 'The service is shutting down'));
  });
  app.addHook('onRequest', corsHeaders(container.trustedOrigins));
  // Every path answers OPTIONS with 204 and no body: a preflight with the headers corsHeaders set.
  app.options('*', { schema: { hide: true } }, (_request, reply) => reply.code(204).header('content-length', '0').send());
}

/** The OpenAPI document (/openapi.json) and its reader (/docs), generated from the route schemas. */
async function document(app: HttpApp, config: Container['config']): Promise<void> {
  await app.register(swagger, {
    openapi: {
      info: { title: 'Agent Platform API', version: '0.1.0', description: 'Hosts AI agents for organizations.' },
      servers: [{ url: config.apiHost }],
      tags: [
        {
          name: 'callbacks',
          description:
            'Signed lifecycle callbacks (schema CallbackEvent). Each delivery is retried ' +
            `${config.callbacks.retryScheduleMs.map(humanDuration).join(', ')} after a failed ` +
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
}

/** What every route shares: the one rule for input text, the request metrics, the error handler. */
function shareHooks(app: HttpApp, metrics: Container['metrics']): void {
  // One rule for the text of every route (json-input.ts): params, query and body, before the
  // route's own validation and handlers, so that no NUL or unpaired surrogate reaches a query.
  app.addHook('preValidation', async (request) => {
    // No body is an empty object: an optional body's schema (with a default) takes it, and a required
    // one says which fields it lacks (Fastify would validate `null`: "expected object, received null").
    if (request.body == null && request.method !== 'GET' && request.method !== 'DELETE') request.body = {};
    const problem =
      unstorableText(request.params, 'params') ??
      unstorableText(request.query, 'querystring') ??
      unstorableText(request.body, 'body');
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
}

/** The console's pages (when this service serves it), GET / for a person, and 404 for the rest. */
async function serveConsole(app: HttpApp, container: Container): Promise<void> {
  const { config } = container;
  // The console, when APP_HOST is this service's own origin and the console is built (npm start builds it).
  const consoleSite = config.appHost === config.apiHost ? createConsoleSite() : undefined;
  if (consoleSite) await app.register(consoleSite.assets);
  else if (config.appHost === config.apiHost)
    container.logger.warn('The console is not built: run `npm run build -w console` to serve it');
  // `curl /` is often a person's first request: it says where the console and the API's docs are.
  app.get('/', { schema: { hide: true } }, (request, reply) =>
    consoleSite?.wantsPage(request) ? consoleSite.sendPage(reply) : reply.send(serviceIndex(config, consoleSite !== undefined)),
  );
  app.setNotFoundHandler((request, reply) =>
    consoleSite?.wantsPage(request)
      ? consoleSite.sendPage(reply)
      : reply.status(404).send({ error: `Route ${request.method} ${request.url.split('?')[0]} not found`, code: 'not_found' }),
  );
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
  const app = createFastify(container, { trust, responseHeaders, nextRequestId, ingestFastPath });
  speakJson(app);
  await guard(app, container, { responseHeaders, ingestFastPath });
  await document(app, config);
  shareHooks(app, metrics);
  await serveConsole(app, container);
  await registerRoutes(app, container, ingestFastPath);
  return app;
}
