import { performance } from 'node:perf_hooks';
import { PGlite } from '@electric-sql/pglite';
let t = performance.now();
const lap = (l: string) => { const n = performance.now(); console.log(l, Math.round(n - t)); t = n; };
const a = await PGlite.create('memory://'); lap('create');
await a.exec('create table x (id int)');
const blob = await a.dumpDataDir('none'); lap('dump ' + blob.size);
for (let i=0;i<3;i++){ const b = await PGlite.create({ loadDataDir: blob }); lap('load'); console.log(await b.query('select count(*) from x')); await b.close(); }
