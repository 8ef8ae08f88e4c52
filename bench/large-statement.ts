/**
 * What sending a large statement and reading a large body cost the event loop, in CPU time of its
 * thread (so a loaded machine moves the figures less than it moves wall-clock ones):
 * node-postgres' own way (the Bind message built and written in one synchronous step) against
 * shared/db/chunked-query.ts's (256 KiB per turn), and a body's chunks joined at the end (what
 * fastify's `parseAs: 'buffer'` does) against copied as they arrive (control-plane/bodies/body-bytes.ts).
 * The thread's CPU clock ticks coarsely (4 ms here), so each figure is the mean over many runs.
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/large-statement.ts [--runs 40] [--mb 7]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres } from '../shared/db/embedded.ts';
import { freePort } from '../shared/db/free-port.ts';
import { chunkedQuery } from '../shared/db/chunked-query.ts';

const { values: args } = parseArgs({
  options: { runs: { type: 'string', default: '40' }, mb: { type: 'string', default: '7' } },
});
const RUNS = Number(args.runs);
const BYTES = Math.round(Number(args.mb) * 1_000_000);
const CHUNK = 64 * 1024;

/** CPU milliseconds of this thread so far, user and system. */
function cpu(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

const dir = await mkdtemp(join(tmpdir(), 'bench-large-statement-'));
const embedded = await startEmbeddedPostgres({ dir, port: await freePort(), ephemeral: true });
const pool = new pg.Pool({ connectionString: embedded.url, max: 1 });
try {
  const bytes = new Uint8Array(Buffer.from('x'.repeat(BYTES)));
  const sql = 'SELECT length($1::text) AS n';
  const client = await pool.connect();
  const immediate = globalThis.setImmediate;
  let whole = 0;
  let first = 0;
  let later = 0;
  let turns = 0;
  for (let run = 0; run < RUNS; run++) {
    // node-postgres submits an idle client's query synchronously: serializing and writing.
    let start = cpu();
    const plain = client.query(sql, [bytes]);
    whole += cpu() - start;
    await plain;
    // Each later turn of the chunked statement is a setImmediate callback: measured one by one.
    globalThis.setImmediate = ((fn: () => void) =>
      immediate(() => {
        const at = cpu();
        fn();
        later += cpu() - at;
        turns++;
      })) as typeof setImmediate;
    start = cpu();
    const chunked = chunkedQuery(client, sql, [bytes]);
    first += cpu() - start;
    await chunked;
    globalThis.setImmediate = immediate;
  }
  client.release();
  const chunks = Array.from({ length: Math.ceil(BYTES / CHUNK) }, () => Buffer.alloc(CHUNK, 1));
  let joined = 0;
  let copied = 0;
  for (let run = 0; run < RUNS; run++) {
    let start = cpu();
    Buffer.concat(chunks);
    joined += cpu() - start;
    const into = Buffer.allocUnsafeSlow(chunks.length * CHUNK);
    for (const [i, chunk] of chunks.entries()) {
      start = cpu();
      into.set(chunk, i * CHUNK);
      copied += cpu() - start;
    }
  }
  const ms = (value: number) => value.toFixed(2);
  console.log(`a statement with a ${args.mb} MB parameter, CPU ms of the event loop (mean of ${RUNS}):`);
  console.log(`  node-postgres: ${ms(whole / RUNS)} in one step`);
  console.log(
    `  chunked: ${ms(first / RUNS)} the first turn, ${ms(later / turns)} each later one (${(turns / RUNS).toFixed(1)} per statement)`,
  );
  console.log(`a body of ${args.mb} MB in 64 KiB chunks, CPU ms:`);
  console.log(
    `  joined at the end: ${ms(joined / RUNS)}; copied as they arrive: ${ms(copied / (RUNS * chunks.length))} per chunk`,
  );
} finally {
  await pool.end();
  await embedded.stop();
  await rm(dir, { recursive: true, force: true });
}
