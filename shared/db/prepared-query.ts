import type pg from 'pg';
import type { QueryResult, QueryResultRow } from 'pg';
import type { Queryable } from './db.ts';

/**
 * Runs `text` as the named prepared statement `name` when `q` is the pool (`Db`) or a transaction
 * (`Tx`): PostgreSQL then parses and plans it once per connection instead of on every call, which
 * was a large part of its time on the engine's hot path (docs/benchmarks.md). Any other Queryable
 * gets a plain query. `name` must belong to one constant SQL text: node-postgres refuses a name
 * reused with another text on the same connection.
 */
export function preparedQuery<R extends QueryResultRow = QueryResultRow>(
  q: Queryable,
  name: string,
  text: string,
  values: unknown[],
): Promise<QueryResult<R>> {
  const config = { name, text, values };
  if ('client' in q) return (q.client as pg.PoolClient).query<R>(config);
  if ('pool' in q) return (q.pool as pg.Pool).query<R>(config);
  return q.query<R>(text, values);
}
