import pg from 'pg';
import { fromDatabase, noteDatabaseEndpoint } from './unavailable.ts';
import { chunkedQuery, chunkedValues } from './chunked-query.ts';
import type { QueryResult, QueryResultRow } from 'pg';

/** Anything that runs SQL: the pool, or one transaction's client. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

/** A transaction: queries on it share one connection; `client` is exposed for pg-boss `send`. */
export interface Tx extends Queryable {
  readonly client: pg.PoolClient;
}

/**
 * The database seam: one pool, and transactions that let an operation and its quota change
 * commit or roll back together.
 */
export interface Db extends Queryable {
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  readonly pool: pg.Pool;
  close(): Promise<void>;
}

// timestamptz → ISO 8601 UTC string (docs/api.md, "Conventions"); int8 → number (counts never pass 2^53).
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 1184) return (v: string) => new Date(v).toISOString();
    if (oid === 20) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface DbOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
  /** PostgreSQL `statement_timeout` of every connection (unset: the server's). */
  statementTimeoutMs?: number;
}

/** Rethrows a query's error marked as the database's (a dropped socket then reads as unavailable). */
function rethrowFromDatabase(error: unknown): never {
  throw fromDatabase(error);
}

/** Opens a pool. Nothing connects until the first query. */
export function createDb(options: DbOptions): Db {
  noteDatabaseEndpoint(options.connectionString);
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'workspace-service',
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    // A server that stops answering (not refusing) would hold a request until TCP gives up, minutes
    // later; past this the query fails as unavailable (shared/db/unavailable.ts). It also bounds
    // the wait for a free connection of the pool.
    connectionTimeoutMillis: 10_000,
    types,
  });
  // An idle client that loses its connection emits here; without a listener it would crash the process.
  pool.on('error', () => {});
  return {
    pool,
    query: (text, values) =>
      (chunkedValues(values) ? chunkedQuery(pool, text, values) : pool.query(text, values)).catch(rethrowFromDatabase),
    async transaction(fn) {
      const client = await pool.connect().catch(rethrowFromDatabase);
      let lost = false;
      try {
        await client.query('BEGIN').catch(rethrowFromDatabase);
        const tx: Tx = {
          client,
          query: (text, values) =>
            (chunkedValues(values) ? chunkedQuery(client, text, values) : client.query(text, values)).catch(
              rethrowFromDatabase,
            ),
        };
        const result = await fn(tx);
        await client.query('COMMIT').catch(rethrowFromDatabase);
        return result;
      } catch (error) {
        // A connection that cannot even roll back is thrown away rather than returned to the pool.
        lost = await client.query('ROLLBACK').then(
          () => false,
          () => true,
        );
        throw error;
      } finally {
        client.release(lost);
      }
    },
    close: () => pool.end(),
  };
}
