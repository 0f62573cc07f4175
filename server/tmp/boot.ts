import { performance } from 'node:perf_hooks';
import { startTestApp } from '../test/helpers/test-app.ts';
for (const kind of ['pglite','postgres']) {
  process.env.TEST_DB = kind; process.env.TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/postgres';
  for (let i=0;i<3;i++){ const t=performance.now(); const app = await startTestApp(); const t2=performance.now(); await app.close(); console.log(kind, 'start', Math.round(t2-t), 'close', Math.round(performance.now()-t2)); }
}
