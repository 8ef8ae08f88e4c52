/**
 * Which failures mean "the database cannot be reached" (answered 503 unavailable with
 * Retry-After) and which stay what they are. The end-to-end path, a killed PostgreSQL under
 * `npm start`, is in test/processes.test.ts.
 */
import t from 'tap';
import { createServer, type AddressInfo } from 'node:net';
import { createDb } from '../shared/db/db.ts';
import pg from 'pg';
import { fromDatabase, isDatabaseUnavailable, noteDatabaseEndpoint } from '../shared/db/unavailable.ts';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { waitFor } from './helpers/runner.ts';
import { toRpcError } from '../control-plane/ws/json-rpc.ts';

const withCode = (message: string, code: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, ...extra });
/** What node-postgres throws for a SQLSTATE (a DatabaseError carries severity). */
const sqlState = (message: string, code: string) => withCode(message, code, { severity: 'FATAL' });
noteDatabaseEndpoint('postgres://u:p@127.0.0.1:5432/db');
noteDatabaseEndpoint('postgres://u:p@db.internal:6543/db');

t.test('lost or refused connections are unavailable', async (t) => {
  for (const error of [
    withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', { address: '127.0.0.1', port: 5432 }),
    withCode('getaddrinfo ENOTFOUND db.internal', 'ENOTFOUND', { hostname: 'db.internal' }),
    new Error('Connection terminated unexpectedly'),
    new Error('timeout exceeded when trying to connect'),
    sqlState('terminating connection due to unexpected postmaster exit', '57P01'),
    sqlState('the database system is starting up', '57P03'),
    sqlState('the database system is in recovery mode', '57P03'),
    sqlState('connection failure', '08006'),
    sqlState('sorry, too many clients already', '53300'),
    sqlState('remaining connection slots are reserved for roles with the SUPERUSER attribute', '53300'),
    sqlState('the database system is shutting down', '57P03'),
    sqlState('database "app" is not currently accepting connections', '55000'),
    withCode('cannot execute INSERT in a read-only transaction', '25006', { severity: 'ERROR' }),
    fromDatabase(withCode('read ECONNRESET', 'ECONNRESET', { syscall: 'read' })) as Error,
    fromDatabase(withCode('write EPIPE', 'EPIPE', { syscall: 'write' })) as Error,
    new Error('Connection terminated due to connection timeout'),
    new Error('a command failed', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED', { port: 6543 }) }),
    new AggregateError(
      [
        withCode('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED', { port: 5432 }),
        withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', { port: 5432 }),
      ],
      '',
    ),
  ])
    t.ok(isDatabaseUnavailable(error), error.message || 'AggregateError');
});

t.test('everything else is not', async (t) => {
  for (const error of [
    sqlState('duplicate key value violates unique constraint', '23505'),
    sqlState('canceling statement due to statement timeout', '57014'),
    sqlState('invalid input syntax for type uuid', '22P02'),
    sqlState('could not serialize access', '40001'),
    withCode('cannot drop the currently open database', '55000', { severity: 'ERROR' }),
    // A reset socket of something else than the database (an S3 store, an identity provider).
    withCode('read ECONNRESET', 'ECONNRESET', { syscall: 'read' }),
    withCode('an error of ours that happens to carry 08001', '08001'),
    // The same socket errors aimed at something else: an identity provider, an S3 store.
    new TypeError('fetch failed', {
      cause: withCode('connect ECONNREFUSED 127.0.0.1:443', 'ECONNREFUSED', { address: '127.0.0.1', port: 443 }),
    }),
    withCode('getaddrinfo ENOTFOUND s3.example.com', 'ENOTFOUND', { hostname: 's3.example.com' }),
    new Error('something else'),
    'a string',
    null,
  ])
    t.notOk(isDatabaseUnavailable(error), String(error instanceof Error ? error.message : error));
});

t.test('a pool pointed at a port nothing listens on fails as unavailable', async (t) => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const db = createDb({ connectionString: `postgres://nobody:x@127.0.0.1:${port}/none` });
  t.teardown(() => db.close());
  t.ok(isDatabaseUnavailable(await db.query('SELECT 1').catch((error: unknown) => error)), 'query');
  t.ok(isDatabaseUnavailable(await db.transaction(async () => 1).catch((error: unknown) => error)), 'transaction');
});

t.test('a JSON-RPC call that lost the database is refused as unavailable, not as an internal error', async (t) => {
  const reported: unknown[] = [];
  const rpc = toRpcError(withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', { port: 5432 }), (error) =>
    reported.push(error),
  );
  t.match(rpc.data, { error: 'unavailable', http_status: 503, retry_after: 2 });
  t.same(reported, [], 'not reported as an internal error');
});

t.test(
  'a database that refuses connections (ALLOW_CONNECTIONS false) answers 503 with Retry-After, not 500',
  async (t) => {
    const { app, db, databaseUrl } = await buildTestApp(t);
    const caller = await signInAnonymous(app);
    // From another database: PostgreSQL will not disallow connections to the one a session is in.
    const url = new URL(databaseUrl);
    const name = decodeURIComponent(url.pathname.slice(1));
    url.pathname = '/postgres';
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    t.teardown(async () => {
      await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
      await admin.end();
    });
    await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
    // The app's open connections are ended: its next one must be made, and is refused (55000, FATAL).
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
    await waitFor(
      async () => db.pool.totalCount,
      (n) => n === 0,
      'the pool to drop its ended connections',
    );
    const res = await call(app, 'GET', `/v1/users/${caller.user.id}`, { as: caller });
    t.equal(res.status, 503);
    t.match(res.body, { status: 'failure', error: 'unavailable' });
    t.equal(res.res.headers['retry-after'], '2');
  },
);
