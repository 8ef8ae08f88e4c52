/**
 * Which failures mean "the database cannot be reached" (answered 503 unavailable with
 * Retry-After) and which stay what they are. The end-to-end path, a killed PostgreSQL under
 * `npm start`, is in test/processes.test.ts.
 */
import t from 'tap';
import { createServer, type AddressInfo } from 'node:net';
import { createDb } from '../shared/db/db.ts';
import { isDatabaseUnavailable, noteDatabaseEndpoint } from '../shared/db/unavailable.ts';
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
