/**
 * The hostile and careless inputs of the hardening pass, replayed against a real server process (on
 * PostgreSQL when reachable, and on PGlite), while a probe asks /healthz every 50 ms. It prints every
 * answer of 5xx and the slowest /healthz, and exits non-zero if there was a 5xx or a stall over 1 s.
 *
 *   npm run check:hardening                 # PostgreSQL when reachable, and PGlite
 *   BENCH_DB=pglite npm run check:hardening
 */
import { connect } from 'node:net';
import { signingHeaders } from '../server/src/features/ingest/verification.ts';
import { startFakeModel, toolResults } from '../server/test/helpers/fake-model.ts';
import { benchDatabase, postgresReachable, runCli, startService, sentNow } from './lib/harness.ts';

const MASTER_KEY = 'bench-master-key-0123456789abcdef0123456789';
const PASSWORD = 'a long hardening password';
const DEEP = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const DOCUMENTS: Record<string, string> = {
  'a 199,000-character word': 'x'.repeat(199_000),
  '100k "[" and 99k "]"': '['.repeat(100_000) + ']'.repeat(99_000),
  'a 90,000-line code block': `\`\`\`\n${'a\n'.repeat(90_000)}\`\`\``,
  'a 40,000-character word': 'y'.repeat(40_000),
};

interface Tally {
  sent: number;
  serverErrors: string[];
}

async function send(tally: Tally, what: string, url: string, init: RequestInit = {}): Promise<Response | undefined> {
  tally.sent++;
  try {
    const response = await fetch(url, { redirect: 'manual', ...init });
    if (response.status >= 500) tally.serverErrors.push(`${what}: ${response.status} ${(await response.text()).slice(0, 200)}`);
    return response;
  } catch (error) {
    tally.serverErrors.push(`${what}: no answer (${(error as Error).message})`);
    return undefined;
  }
}

/** /healthz every 50 ms until stopped; the slowest answer. */
function healthProbe(url: string) {
  let slowest = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      const started = performance.now();
      await fetch(`${url}/healthz`).then(
        (r) => r.text(),
        () => '',
      );
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return slowest;
    },
  };
}

/** A post that sends its headers and then one byte a second; resolves with the status the server answered. */
function tricklingPost(url: string, path: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => {});
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`);
    const timer = setInterval(() => socket.writable && socket.write(' '), 1000);
    socket.on('close', () => {
      clearInterval(timer);
      resolve(Number(received.slice(9, 12)) || 0);
    });
  });
}

async function run(kind: 'postgres' | 'pglite', model: Awaited<ReturnType<typeof startFakeModel>>) {
  const database = await benchDatabase(kind);
  const env = { ...database.env, ENCRYPTION_MASTER_KEY: MASTER_KEY, NODE_ENV: 'development' };
  await runCli(env, 'orgs', 'create', '--slug', 'acme', '--name', 'Acme');
  await runCli(
    env,
    'users',
    'create',
    '--email',
    'admin@acme.example',
    '--password',
    PASSWORD,
    '--role',
    'Admin',
    '--org',
    'acme',
  );
  const service = await startService({
    ...env,
    ...model.env,
    HTTP_REQUEST_TIMEOUT_SECONDS: '5',
    WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '100000',
    AUTH_RATE_LIMIT_PER_MINUTE: '1000',
  });
  const tally: Tally = { sent: 0, serverErrors: [] };
  const probe = healthProbe(service.url);
  try {
    const login = await fetch(`${service.url}/auth/login/credentials`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@acme.example', password: PASSWORD }),
    });
    const token = /session=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')![1]!;
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${service.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then((r) => r.json());
    const agent = await api('POST', '/orgs/acme/agents', {
      name: 'Writer',
      instructions: 'Write documents.',
      tools: ['generateDocument'],
    });
    const rule = await api('POST', '/orgs/acme/action-rules', {
      name: 'Docs',
      agentId: agent.id,
      approvalRules: { generateDocument: 'allow' },
    });
    const me = await api('GET', '/auth/me');
    const created = await api('POST', '/orgs/acme/webhooks', {
      name: 'Big',
      actionRuleId: rule.id,
      runAsUserId: me.id,
      maxPayloadBytes: 10 * 1024 * 1024,
      rateLimitPerMinute: 1000,
    });
    const hmac = await api('POST', '/orgs/acme/webhooks', {
      name: 'Hmac',
      actionRuleId: rule.id,
      runAsUserId: me.id,
      verificationScheme: 'hmac_sha256',
    });
    const path = new URL(created.url).pathname;
    const post = (what: string, body: string, headers: Record<string, string> = {}, target = path) =>
      send(tally, what, `${service.url}${target}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...signingHeaders('wh', created.secret, body, sentNow()), ...headers },
      });

    // Ingest: text nothing can store, nesting, 700,000 keys at the 10 MB limit, odd paths and methods.
    await post('NUL in data', '{"eventType":"x","data":{"a":"\\u0000"}}');
    await post('lone surrogate', '{"eventType":"x\\ud800"}');
    await post('5,000 levels of nesting', `{"eventType":"x","data":{"a":${DEEP(5_000)}}}`);
    await post(
      '700,000 keys',
      `{"eventType":"x","data":{${Array.from({ length: 700_000 }, (_, i) => `"${i.toString(36)}":0`).join(',')}}}`,
    );
    await post('%00 in the identifier', '{"eventType":"x"}', {}, `${path}%00`);
    await post('5,000-character identifier', '{"eventType":"x"}', {}, `${path}${'a'.repeat(5_000)}`);
    await send(tally, 'OPTIONS on ingest', `${service.url}${path}`, { method: 'OPTIONS' });
    await send(tally, '20,000-character URL', `${service.url}/orgs/${'x'.repeat(20_000)}`);
    // Retries: the same wh-id and body twice, and the same hmac_sha256 request twice.
    const retried = '{"eventType":"order.created"}';
    const headers = signingHeaders('wh', created.secret, retried, { ...sentNow(), messageId: 'msg_hardening' });
    const answers = await Promise.all(
      [0, 1].map(() =>
        send(tally, 'wh-id retry', `${service.url}${path}`, {
          method: 'POST',
          body: retried,
          headers: { 'content-type': 'application/json', ...headers },
        }).then((r) => r?.json()),
      ),
    );
    const hmacHeaders = { 'content-type': 'application/json', ...signingHeaders('hmac_sha256', hmac.secret, retried, sentNow()) };
    const hmacAnswers = await Promise.all(
      [0, 1].map(() =>
        send(tally, 'hmac retry', `${service.url}${new URL(hmac.url).pathname}`, {
          method: 'POST',
          body: retried,
          headers: hmacHeaders,
        }).then((r) => r?.json()),
      ),
    );

    // Every documented route: NUL in each path and query parameter and body field, deep bodies, extreme cursors.
    const spec = (await (await fetch(`${service.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, any>> };
    const auth = { authorization: `Bearer ${token}` };
    for (const [template, item] of Object.entries(spec.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const fill = (bad?: string) =>
          template.replace(/\{(\w+)\}/g, (_, name: string) =>
            name === bad ? 'bad%00text' : /org/i.test(name) ? 'acme' : '00000000-0000-4000-8000-000000000000',
          );
        for (const parameter of operation.parameters ?? []) {
          const target = parameter.in === 'path' ? fill(parameter.name) : `${fill()}?${parameter.name}=bad%00text`;
          await send(tally, `${method} ${template} ${parameter.name}`, `${service.url}${target}`, {
            method: method.toUpperCase(),
            headers: auth,
          });
          if (parameter.name === 'cursor') {
            for (const instant of ['-271821-04-20T00:00:00.000Z', '+275760-09-13T00:00:00.000Z']) {
              const cursor = Buffer.from(`${instant}|00000000-0000-4000-8000-000000000000`).toString('base64url');
              await send(tally, `${method} ${template} cursor ${instant}`, `${service.url}${fill()}?cursor=${cursor}`, {
                method: method.toUpperCase(),
                headers: auth,
              });
            }
          }
        }
        const schema = operation.requestBody?.content?.['application/json']?.schema;
        for (const property of Object.keys(schema?.properties ?? {})) {
          for (const value of ['bad\u0000text', 'bad\ud800text', '0000-01-01T00:00:00Z']) {
            await send(tally, `${method} ${template} body.${property}`, `${service.url}${fill()}`, {
              method: method.toUpperCase(),
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify({ [property]: value }),
            });
          }
        }
        if (operation.requestBody) {
          await send(tally, `${method} ${template} deep body`, `${service.url}${fill()}`, {
            method: method.toUpperCase(),
            headers: { ...auth, 'content-type': 'application/json' },
            body: `{"data":${DEEP(5_000)}}`,
          });
        }
      }
    }

    // Slow senders: 30 posts that trickle their bodies, each closed with 408 after HTTP_REQUEST_TIMEOUT_SECONDS.
    const trickled = await Promise.all(Array.from({ length: 30 }, () => tricklingPost(service.url, path)));

    // Documents the model asks for: each rendered off the main thread.
    model.script((request) => {
      if (toolResults(request).length > 0) return { text: 'done' };
      const name = Object.keys(DOCUMENTS).find((key) => request.messages.some((message) => message.content?.includes(key)))!;
      return { toolCalls: [{ name: 'generateDocument', arguments: { title: name, content: DOCUMENTS[name] } }] };
    });
    const actions: string[] = [];
    for (const name of Object.keys(DOCUMENTS)) {
      const response = await post(`document: ${name}`, JSON.stringify({ eventType: 'report.requested', instructions: name }));
      actions.push((await response!.json()).actionId);
    }
    const documentStarted = performance.now();
    const outcomes = [];
    for (const actionId of actions) {
      for (;;) {
        const row = await api('GET', `/orgs/acme/ledger/${actionId}`);
        if (row.status === 'completed' || row.status === 'failed') {
          outcomes.push(
            `${row.status}${row.execution?.toolCalls?.[0]?.status ? ` (generateDocument ${row.execution.toolCalls[0].status})` : ''}`,
          );
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }

    const slowest = await probe.stop();
    console.log(
      `hardening (${kind.padEnd(8)}): ${tally.sent} requests, ${tally.serverErrors.length} answers of 5xx; slowest /healthz ${slowest.toFixed(0)} ms`,
    );
    console.log(
      `  wh-id retried with the same body: ${answers[0]?.actionId === answers[1]?.actionId ? 'one action, the same answer' : `different answers ${JSON.stringify(answers)}`}; hmac_sha256 request twice: ${hmacAnswers[0]?.actionId === hmacAnswers[1]?.actionId ? 'one action' : 'two actions'}`,
    );
    console.log(`  30 trickling posts answered: ${[...new Set(trickled)].join(', ')}`);
    console.log(`  documents: ${outcomes.join('; ')} in ${((performance.now() - documentStarted) / 1000).toFixed(1)} s`);
    for (const error of tally.serverErrors) console.log(`  5xx: ${error}`);
    return tally.serverErrors.length === 0 && slowest < 1_000;
  } finally {
    await probe.stop();
    await service.stop();
    await database.drop();
  }
}

const model = await startFakeModel(undefined, { keepRequests: false });
let ok = true;
try {
  const kinds = process.env.BENCH_DB
    ? [process.env.BENCH_DB as 'postgres' | 'pglite']
    : (await postgresReachable())
      ? (['postgres', 'pglite'] as const)
      : (['pglite'] as const);
  for (const kind of kinds) ok = (await run(kind, model)) && ok;
} finally {
  await model.close();
}
process.exit(ok ? 0 : 1);
