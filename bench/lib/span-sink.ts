import { createServer } from 'node:http';

/**
 * A trace collector for benchmarks: takes OTLP/HTTP exports on loopback (POST /v1/traces, JSON) and
 * counts their spans, answering at once, as a collector on another machine would.
 */
export async function startSpanSink() {
  let spans = 0;
  let requests = 0;
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      requests++;
      spans += body.split('"spanId"').length - 1;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => spans,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
