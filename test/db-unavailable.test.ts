/**
 * Which failures mean "the database cannot be reached" (answered 503 unavailable with
 * Retry-After) and which stay what they are. The end-to-end path, a killed PostgreSQL under
 * `npm start`, is in test/processes.test.ts.
 */
import t from 'tap';
import { isDatabaseUnavailable } from '../shared/db/unavailable.ts';
import { toRpcError } from '../control-plane/ws/json-rpc.ts';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

t.test('lost or refused connections are unavailable', async (t) => {
  for (const error of [
    withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
    withCode('read ECONNRESET', 'ECONNRESET'),
    new Error('Connection terminated unexpectedly'),
    new Error('timeout exceeded when trying to connect'),
    withCode('terminating connection due to administrator command', '57P01'),
    withCode('the database system is starting up', '57P03'),
    withCode('the database system is in recovery mode', '57P03'),
    withCode('connection failure', '08006'),
    withCode('sorry, too many clients already', '53300'),
    new Error('a command failed', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') }),
    new AggregateError([withCode('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED'), withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')], ''),
  ]) t.ok(isDatabaseUnavailable(error), error.message || 'AggregateError');
});

t.test('everything else is not', async (t) => {
  for (const error of [
    withCode('duplicate key value violates unique constraint', '23505'),
    withCode('canceling statement due to statement timeout', '57014'),
    withCode('invalid input syntax for type uuid', '22P02'),
    withCode('could not serialize access', '40001'),
    new Error('something else'),
    'a string',
    null,
  ]) t.notOk(isDatabaseUnavailable(error), String(error instanceof Error ? error.message : error));
});

t.test('a JSON-RPC call that lost the database is refused as unavailable, not as an internal error', async (t) => {
  const reported: unknown[] = [];
  const rpc = toRpcError(withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), (error) => reported.push(error));
  t.match(rpc.data, { error: 'unavailable', http_status: 503, retry_after: 2 });
  t.same(reported, [], 'not reported as an internal error');
});
