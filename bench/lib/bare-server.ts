// The baseline: a bare Node HTTP server answering a JSON body of the same size as GET /auth/me.
import { createServer } from 'node:http';

const body = JSON.stringify({
  id: '2f0be72e-e2c7-4b29-ad90-696380f1a30c',
  email: 'bench@example.com',
  username: 'bench',
  firstName: 'Bench',
  lastName: 'User',
  codehostId: null,
  idpId: null,
  role: 'Admin',
  provider: 'credentials',
  externalUserId: null,
});
// Reads the request body before answering, as any POST handler must.
const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
// The benchmark that forked it is gone (even SIGKILLed): nothing will ask it anything again.
process.on('disconnect', () => process.exit(0));
