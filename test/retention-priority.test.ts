/**
 * The retention sweep's backend at a lower CPU priority (shared/retention/backend-priority.ts): on
 * the test server, a process of this host, the sweep's backend runs at RETENTION_SWEEP_NICE and
 * its connection is closed afterwards, so no pooled connection serves requests at that priority;
 * a server elsewhere, another network namespace or a pid that is not PostgreSQL is left alone.
 */
import { readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import type pg from 'pg';
import t from 'tap';
import { createDb } from '../shared/db/db.ts';
import { lowerBackendPriority } from '../shared/retention/backend-priority.ts';
import { runRecordedSweep } from '../shared/retention/recorded-sweep.ts';
import { createTestDatabase } from './helpers/db.ts';

const linux = process.platform === 'linux';
const autogroups = linux && readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';
const db = createDb({ connectionString: await createTestDatabase(t), max: 4 });
t.teardown(() => db.close());

/** The backend pids of every connection the pool holds now. */
async function pooledBackends(): Promise<number[]> {
  const clients = await Promise.all([db.pool.connect(), db.pool.connect(), db.pool.connect(), db.pool.connect()]);
  try {
    return await Promise.all(
      clients.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid),
    );
  } finally {
    for (const c of clients) c.release();
  }
}

t.test("a sweep lowers its own backend's priority and never pools it", { skip: !linux && 'Linux only' }, async (t) => {
  const result = await runRecordedSweep(db, { trigger: 'ops', backendNice: 10 });
  if (!result.ran) throw new Error('no sweep ran');
  t.match(result.backend, { lowered: true, nice: 10 });
  // PostgreSQL makes each backend a session of its own: with autogroups, its session's value counts.
  if (autogroups) t.match(result.backend, { autogroup: 10 }, "the backend's autogroup at nice 10");
  t.equal(result.dutyPercent, 100, 'batches back to back when the kernel yields for the sweep');
  const pid = result.backend.lowered ? result.backend.pid : 0;
  const pids = await pooledBackends();
  t.notOk(pids.includes(pid), "the sweep's connection is not in the pool");
  for (const p of pids) t.equal(getPriority(p), 0, `backend ${p} at nice 0`);
  // The backend ends once it has read its client's goodbye: asynchronously, so wait for it.
  for (;;) {
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [
      pid,
    ]);
    if (rows[0]!.n === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.pass("the sweep's backend has ended");
});

t.test('RETENTION_SWEEP_NICE 0 leaves the backend alone, and the duty at 50', async (t) => {
  const result = await runRecordedSweep(db, { trigger: 'ops', backendNice: 0 });
  if (!result.ran) throw new Error('no sweep ran');
  t.match(result.backend, { lowered: false, reason: 'RETENTION_SWEEP_NICE is 0' });
  t.equal(result.dutyPercent, 50);
  for (const p of await pooledBackends()) t.equal(getPriority(p), 0);
});

t.test('a set duty is kept whatever the priority', { skip: !linux && 'Linux only' }, async (t) => {
  const result = await runRecordedSweep(db, { trigger: 'ops', backendNice: 10, dutyPercent: 30 });
  t.match(result, { ran: true, dutyPercent: 30, backend: { lowered: true } });
});

/** A client whose server answers `identity`, on a socket with `localPort`. */
function fakeClient(
  identity: { pid: number; server_addr: string | null; client_port: number | null },
  localPort?: number,
) {
  return {
    query: async () => ({ rows: [identity] }),
    connection: { stream: { localPort } },
  } as unknown as pg.PoolClient;
}

t.test(
  'only a backend of this host, this namespace and named postgres is touched',
  { skip: !linux && 'Linux only' },
  async (t) => {
    const elsewhere = await lowerBackendPriority(
      fakeClient({ pid: 1, server_addr: '10.1.2.3', client_port: 5000 }, 5000),
      10,
    );
    t.same(elsewhere, { lowered: false, reason: 'the database server is on another host' });
    const namespace = await lowerBackendPriority(
      fakeClient({ pid: 1, server_addr: '127.0.0.1', client_port: 5001 }, 5000),
      10,
    );
    t.same(namespace, { lowered: false, reason: 'the database server is not in this network namespace' });
    // This test's own process: a process of this host, but not PostgreSQL.
    const before = getPriority(process.pid);
    const notPostgres = await lowerBackendPriority(
      fakeClient({ pid: process.pid, server_addr: '127.0.0.1', client_port: 5000 }, 5000),
      10,
    );
    t.same(notPostgres, { lowered: false, reason: 'the backend pid is not a PostgreSQL process of this host' });
    t.equal(getPriority(process.pid), before, 'this process kept its priority');
    const gone = await lowerBackendPriority(fakeClient({ pid: 2 ** 22 + 1, server_addr: null, client_port: null }), 10);
    t.same(gone, { lowered: false, reason: 'the backend is not a process of this host' });
  },
);
