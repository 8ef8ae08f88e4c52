import pg from 'pg';
import { fromDatabase } from '../../shared/db/unavailable.ts';

/**
 * The bytes of one `COPY … TO STDOUT (FORMAT binary)`, gathered as the server sends them. A
 * query's answer as text would carry the bytes hex-encoded: twice their size, encoded by the
 * server, then turned into a string and decoded back on the control plane's event loop (about
 * 5 ms of its CPU per 256 KiB, most of it collecting the large strings, against 1 ms this way;
 * node-postgres's binary results decode every value as UTF-8 text, so they cannot carry bytes).
 * A query object of node-postgres's own kind (`submit` and the `handle…` callbacks it calls).
 */
class BinaryCopy {
  readonly text: string;
  private bytes: Buffer;
  private length = 0;
  readonly done: Promise<Buffer>;
  private resolve!: (bytes: Buffer) => void;
  private reject!: (error: unknown) => void;

  constructor(text: string, expected: number) {
    this.text = text;
    this.bytes = Buffer.allocUnsafe(expected);
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  submit(connection: { query(text: string): void }): void {
    connection.query(this.text);
  }

  handleCopyData(message: { chunk: Buffer }): void {
    // The chunk is a view of the connection's read buffer, which the next read may overwrite: copy now.
    const { chunk } = message;
    if (this.length + chunk.length > this.bytes.length) {
      const larger = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.length + chunk.length));
      this.bytes.copy(larger, 0, 0, this.length);
      this.bytes = larger;
    }
    chunk.copy(this.bytes, this.length);
    this.length += chunk.length;
  }

  handleReadyForQuery(): void {
    this.resolve(this.bytes.subarray(0, this.length));
  }

  handleError(error: unknown): void {
    this.reject(error);
  }

  // Messages a COPY TO does not send, or whose content it does not need.
  handleCommandComplete(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
}

/** The signature, flags and header extension length that open COPY's binary format. */
const SIGNATURE_BYTES = 11;

/** The one field of the one row of COPY's binary format in `copy`; an empty buffer for none or NULL. */
function onlyField(copy: Buffer): Buffer {
  const extension = copy.readInt32BE(SIGNATURE_BYTES + 4);
  let at = SIGNATURE_BYTES + 8 + extension;
  // The trailer (-1) in place of a row's field count: no row.
  if (copy.readInt16BE(at) < 1) return copy.subarray(0, 0);
  at += 2;
  const length = copy.readInt32BE(at);
  at += 4;
  return length < 0 ? copy.subarray(0, 0) : copy.subarray(at, at + length);
}

/**
 * `length` bytes of large object `oid` from `offset` (fewer at its end), read with one short
 * statement on a connection of `pool` given back at once. Errors are the database's
 * (shared/db/unavailable.ts), as a query's would be.
 */
export async function readLargeObjectChunk(
  pool: pg.Pool,
  oid: number,
  offset: number,
  length: number,
): Promise<Buffer> {
  // COPY takes no parameters: the three numbers go into its text, checked to be integers first.
  for (const n of [oid, offset, length])
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a large object position: ${n}`);
  const client = await pool.connect().catch((error: unknown) => {
    throw fromDatabase(error);
  });
  let broken = false;
  try {
    const copy = new BinaryCopy(
      `COPY (SELECT lo_get(${oid}::oid, ${offset}::bigint, ${length}::int)) TO STDOUT (FORMAT binary)`,
      length + 64,
    );
    // Returns the query object itself (not a promise): its answer is `copy.done`.
    void client.query(copy as unknown as pg.QueryConfig);
    return onlyField(await copy.done);
  } catch (error) {
    // A statement error leaves the connection usable; a lost connection is not given back.
    broken = !(error instanceof pg.DatabaseError);
    throw fromDatabase(error);
  } finally {
    client.release(broken);
  }
}
