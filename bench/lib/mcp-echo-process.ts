// The MCP benchmark's server in a process of its own, as an organization's MCP server is: it says
// `{ url }` when it listens, answers `{ calls, sessions }` to `{ report: true }`, and closes on SIGTERM.
import { startEchoMcpServer } from './mcp-echo-server.ts';

const server = await startEchoMcpServer({ idempotent: process.env.BENCH_MCP_IDEMPOTENT === '1' });
process.send?.({ url: server.url });
process.on('message', (message: { report?: boolean }) => {
  if (message.report) process.send?.({ calls: server.calls(), sessions: server.sessions() });
});
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
// The benchmark that forked it is gone (even SIGKILLed): nothing will ask it anything again.
process.on('disconnect', () => process.exit(0));
