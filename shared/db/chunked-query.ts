/**
 * A statement whose parameters include megabytes of bytes (a body thread's encoded records or
 * JSON text), sent to PostgreSQL without holding the event loop for a time proportional to its
 * size. node-postgres copies every parameter into one Bind message (its writer growing a buffer
 * by doubling, copying at each step) and hands the whole message to the socket in one write; on
 * loopback the kernel carries those megabytes into the server's socket within that system call.
 * Here the Bind message is written as it is laid out — small pieces, and each large parameter's
 * own bytes as views, never copied — `CHUNK_BYTES` at most per event-loop turn, each turn after
 * the socket took the previous one, so other requests run in between.
 *
 * It stays one extended-protocol statement (Parse, Bind, Describe, Execute, Sync, unnamed), as
 * node-postgres would send it: the same parameter formats (byte arrays binary, the rest text),
 * the same answers and errors, handled by node-postgres' own Query. The server answers only after
 * Sync, and node-postgres sends nothing else on the connection until it has answered (a caller's
 * ROLLBACK after an error waits in the client's queue), so the pieces are never interleaved.
 */
import pg from 'pg';
import type { QueryResult, QueryResultRow } from 'pg';

/** Bytes written to the socket per event-loop turn, at most (the last piece of a turn may pass it). */
export const CHUNK_BYTES = 256 * 1024;

/** A parameter from this size on makes the statement a chunked one (chunkedValues). */
export const CHUNKED_PARAM_BYTES = 256 * 1024;

/** A value node-postgres would send as text, or as binary (a byte array), or null. */
type Simple = string | number | bigint | boolean | Uint8Array | null | undefined;

function isSimple(value: unknown): value is Simple {
  return (
    value === null ||
    value === undefined ||
    value instanceof Uint8Array ||
    ['string', 'number', 'bigint', 'boolean'].includes(typeof value)
  );
}

/**
 * Whether a statement with `values` is sent chunked: one of them is a byte array of
 * `CHUNKED_PARAM_BYTES` or more, and all are values whose wire form is plain (strings, numbers,
 * booleans, byte arrays, nulls; not arrays, dates nor objects, which node-postgres converts).
 */
export function chunkedValues(values: readonly unknown[] | undefined): values is readonly Simple[] {
  if (values === undefined) return false;
  let large = false;
  for (const value of values) {
    if (!isSimple(value)) return false;
    if (value instanceof Uint8Array && value.byteLength >= CHUNKED_PARAM_BYTES) large = true;
  }
  return large;
}

/** The Bind message of an unnamed statement and portal, as pieces: byte arrays among them are views of the values. */
function bindPieces(values: readonly Simple[]): Uint8Array[] {
  const params = values.map((value): Uint8Array | null => {
    if (value === null || value === undefined) return null;
    if (value instanceof Uint8Array) return value;
    // node-postgres' text form of a plain value (lib/utils.js prepareValue: `val.toString()`).
    return Buffer.from(String(value), 'utf8');
  });
  // 'B', length, portal "", statement "", format codes, values, result format codes (one: text).
  let length = 4 + 1 + 1 + 2 + 2 * params.length + 2 + 2 + 2;
  for (const param of params) length += 4 + (param?.byteLength ?? 0);
  const pieces: Uint8Array[] = [];
  let head = Buffer.allocUnsafe(1 + 4 + 2 + 2 + 2 * params.length + 2);
  let at = head.writeUInt8(0x42, 0);
  at = head.writeInt32BE(length, at);
  at = head.writeUInt8(0, at);
  at = head.writeUInt8(0, at);
  at = head.writeInt16BE(params.length, at);
  for (const value of values) at = head.writeInt16BE(value instanceof Uint8Array ? 1 : 0, at);
  head.writeInt16BE(params.length, at);
  pieces.push(head);
  for (const param of params) {
    head = Buffer.allocUnsafe(4);
    head.writeInt32BE(param === null ? -1 : param.byteLength, 0);
    pieces.push(head);
    if (param !== null && param.byteLength > 0) pieces.push(param);
  }
  const tail = Buffer.allocUnsafe(4);
  tail.writeInt16BE(1, 0);
  tail.writeInt16BE(0, 2);
  pieces.push(tail);
  return pieces;
}

/** What of node-postgres' connection this query uses (lib/connection.js). */
interface WireConnection {
  stream: {
    write(chunk: Uint8Array, callback: (error?: Error | null) => void): boolean;
    cork(): void;
    uncork(): void;
  };
  parse(query: { text: string; name?: string; types?: unknown[] }, more?: boolean): void;
  describe(message: { type: 'P' | 'S'; name?: string }, more?: boolean): void;
  execute(config: { portal?: string; rows?: number }, more?: boolean): void;
  sync(): void;
}

/**
 * node-postgres' Query with its Bind written in chunks (the module comment). node-postgres calls
 * `prepare` from `submit`, with the stream corked: Parse and the first small pieces go out
 * together when it uncorks, the rest in later turns.
 */
class ChunkedQuery extends pg.Query {
  readonly #text: string;
  readonly #values: readonly Simple[];

  constructor(text: string, values: readonly Simple[]) {
    super(text, values as unknown[]);
    this.#text = text;
    this.#values = values;
  }

  prepare(connection: WireConnection): void {
    connection.parse({ text: this.#text, name: '', types: [] });
    const pieces = bindPieces(this.#values);
    let piece = 0;
    let offset = 0;
    const pump = (): void => {
      let written = 0;
      while (piece < pieces.length) {
        const bytes = pieces[piece]!;
        const end = Math.min(bytes.byteLength, offset + CHUNK_BYTES - written);
        const chunk = bytes.subarray(offset, end);
        written += chunk.byteLength;
        offset = end;
        if (offset === bytes.byteLength) {
          piece++;
          offset = 0;
        }
        if (written >= CHUNK_BYTES && piece < pieces.length) {
          // The next turn starts once the socket took this chunk (its write done, not queued).
          connection.stream.write(chunk, (error) => {
            if (error == null) setImmediate(pump);
            // A failed write is the connection's error: node-postgres fails the query with it.
          });
          return;
        }
        connection.stream.write(chunk, () => {});
      }
      connection.stream.cork();
      connection.describe({ type: 'P', name: '' }, true);
      connection.execute({ portal: '', rows: undefined }, true);
      connection.sync();
      connection.stream.uncork();
    };
    pump();
  }
}

/**
 * Runs `text` with `values` (chunkedValues) on `client` as a chunked statement; answers and
 * errors as `client.query(text, values)`'s.
 */
export function chunkedQuery<R extends QueryResultRow>(
  client: pg.ClientBase | pg.Pool,
  text: string,
  values: readonly Simple[],
): Promise<QueryResult<R>> {
  const query = new ChunkedQuery(text, values);
  if (client instanceof pg.Pool) {
    // The pool's query takes a submittable, sets its callback and releases its client after it.
    return (client as unknown as { query(q: ChunkedQuery): Promise<QueryResult<R>> }).query(query);
  }
  return new Promise((resolve, reject) => {
    (query as unknown as { callback: (error: Error | null, result: QueryResult<R>) => void }).callback = (
      error,
      result,
    ) => (error ? reject(error) : resolve(result));
    client.query(query);
  });
}
