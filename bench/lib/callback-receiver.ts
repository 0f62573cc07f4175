// A customer's callback receiver, in its own process: answers 200 at once and notes when each
// webhook-id arrived (performance.timeOrigin + now: comparable across processes on one machine).
import { createServer } from 'node:http';

const arrivals = new Map<string, number>();
const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    const id = request.headers['webhook-id'];
    if (typeof id === 'string' && !arrivals.has(id)) arrivals.set(id, performance.timeOrigin + performance.now());
    response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    response.end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.({ ready: true }));
process.on('message', (message: { report?: boolean; reset?: boolean }) => {
  if (message.report) process.send?.({ arrivals: [...arrivals] });
  if (message.reset) arrivals.clear();
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
// The benchmark that forked it is gone (even SIGKILLed): nothing will ask it anything again.
process.on('disconnect', () => process.exit(0));
