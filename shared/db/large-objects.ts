/**
 * PostgreSQL large objects through the server's own functions (`lo_from_bytea`, `lo_put`,
 * `lo_get`), one short query a chunk: no descriptor is opened, so nothing but the caller's
 * transaction ties the chunks together. Download Model reads its chunks in COPY's binary format
 * instead (control-plane/models/large-object-chunk.ts): this module's reads come back hex-encoded,
 * a cost the model host's own process bears but the API's event loop should not. Removal is the `models` table's trigger's
 * (`lo_unlink`, migrations 019 and 020).
 */
import type { Queryable } from './db.ts';

/**
 * Writes `chunks` into a new large object and returns its oid. Run it in a transaction: an
 * object whose write failed half-way is then rolled back with it, never left behind.
 */
export async function writeLargeObject(db: Queryable, chunks: AsyncIterable<Buffer>): Promise<number> {
  let oid: number | undefined;
  let offset = 0;
  for await (const chunk of chunks) {
    if (oid === undefined) {
      const { rows } = await db.query<{ oid: number }>('SELECT lo_from_bytea(0, $1::bytea) AS oid', [chunk]);
      oid = rows[0]!.oid;
    } else {
      await db.query('SELECT lo_put($1::oid, $2::bigint, $3::bytea)', [oid, offset, chunk]);
    }
    offset += chunk.length;
  }
  if (oid === undefined) {
    const { rows } = await db.query<{ oid: number }>("SELECT lo_from_bytea(0, ''::bytea) AS oid");
    oid = rows[0]!.oid;
  }
  return oid;
}

/** Reads `length` bytes of a large object from `offset`; fewer where the object ends sooner. */
async function readChunk(db: Queryable, oid: number, offset: number, length: number): Promise<Buffer> {
  const { rows } = await db.query<{ data: Buffer }>('SELECT lo_get($1::oid, $2::bigint, $3::int) AS data', [
    oid,
    offset,
    length,
  ]);
  return rows[0]!.data;
}

/**
 * Reads a large object of `size` bytes whole, `chunk` bytes a query. Throws when it holds fewer
 * bytes than `size`.
 */
export async function readLargeObject(db: Queryable, oid: number, size: number, chunk: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let offset = 0; offset < size;) {
    const data = await readChunk(db, oid, offset, Math.min(chunk, size - offset));
    if (data.length === 0) throw new Error(`Large object ${oid} ends at ${offset} bytes, not ${size}.`);
    parts.push(data);
    offset += data.length;
  }
  return Buffer.concat(parts, size);
}
