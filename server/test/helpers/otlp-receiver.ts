import { startLoopbackServer } from './http.ts';

/** An attribute value of OTLP/JSON, decoded. */
type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
const decode = (value: AnyValue | undefined): unknown => {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(decode);
  return undefined;
};
const attributesOf = (list: Array<{ key: string; value: AnyValue }> | undefined) =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, decode(value)]));

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
}

/**
 * A collector on loopback that speaks OTLP over HTTP (POST /v1/traces, the JSON encoding the
 * official exporter sends by default, or protobuf refused with 415): it keeps every span it is sent.
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const requests: Array<{ contentType: string; headers: Record<string, unknown> }> = [];
  const server = await startLoopbackServer(async (request, response, body) => {
    if (request.method !== 'POST' || request.url !== '/v1/traces') {
      response.writeHead(404).end();
      return;
    }
    const contentType = String(request.headers['content-type'] ?? '');
    requests.push({ contentType, headers: request.headers });
    if (!contentType.startsWith('application/json')) {
      response.writeHead(415).end();
      return;
    }
    const exported = JSON.parse(body) as {
      resourceSpans?: Array<{
        resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
        scopeSpans?: Array<{ spans?: Array<Record<string, any>> }>;
      }>;
    };
    for (const resourceSpans of exported.resourceSpans ?? []) {
      const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
      for (const scope of resourceSpans.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          spans.push({
            service,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            startNs: BigInt(span.startTimeUnixNano),
            endNs: BigInt(span.endTimeUnixNano),
            status: span.status ?? {},
            attributes: attributesOf(span.attributes),
            events: (span.events ?? []).map((event: { name: string; attributes?: Array<{ key: string; value: AnyValue }> }) => ({
              name: event.name,
              attributes: attributesOf(event.attributes),
            })),
          });
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  return { url: server.url, spans, requests, close: server.close };
}
