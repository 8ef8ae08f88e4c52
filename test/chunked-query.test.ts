/**
 * Statements with large byte-array parameters (a body thread's encoded records or JSON text) are
 * written to PostgreSQL in chunks across event-loop turns (shared/db/chunked-query.ts). What the
 * server receives must be the same statement, byte for byte, whatever falls on a chunk's
 * boundary; its errors must be the same, roll back the transaction and leave the connection
 * usable; and no single write carries more than a chunk.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createDb, type Db } from '../shared/db/db.ts';
import { CHUNK_BYTES, CHUNKED_PARAM_BYTES, chunkedValues } from '../shared/db/chunked-query.ts';
import { createTestDatabase } from './helpers/db.ts';

// One connection: every statement after a failed one runs on the connection that failed.
const db: Db = createDb({ connectionString: await createTestDatabase(t), max: 1 });
t.teardown(() => db.close());

/** Sizes of the writes to the pool's one connection while `fn` runs, and whether a turn passed before the last. */
async function watchWrites<T>(fn: () => Promise<T>): Promise<{ result: T; sizes: number[]; turnBeforeLast: boolean }> {
  const client = await db.pool.connect();
  const stream = (client as unknown as { connection: { stream: { write: (...args: unknown[]) => boolean } } })
    .connection.stream;
  client.release();
  const sizes: number[] = [];
  let turned = false;
  let turnBeforeLast = false;
  const write = stream.write;
  stream.write = function (this: unknown, chunk: unknown, ...rest: unknown[]) {
    sizes.push((chunk as Uint8Array).byteLength);
    // Set on each write: true at the last one if an immediate queued before the statement ran first.
    turnBeforeLast = turned;
    return write.call(this, chunk, ...rest);
  };
  try {
    setImmediate(() => {
      turned = true;
    });
    const result = await fn();
    return { result, sizes, turnBeforeLast };
  } finally {
    stream.write = write;
  }
}

/** `text` as UTF-8 bytes of an array buffer of their own, as a body thread hands them over. */
const utf8 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));

t.test('a statement written in chunks reaches the server byte for byte', async (t) => {
  // Four-byte characters from offset 1, so chunk boundaries (multiples of CHUNK_BYTES from the
  // message's start, offset by its head) fall inside characters as well as between them.
  const text = 'a' + '😀é€'.repeat(Math.ceil((3 * CHUNK_BYTES) / 9)) + 'z';
  const bytes = randomBytes(2 * CHUNK_BYTES + 17);
  const values = [42, utf8(text), null, bytes, 'small ✓', true, utf8('')];
  t.ok(chunkedValues(values), 'the statement is sent in chunks');
  const { result, sizes, turnBeforeLast } = await watchWrites(() =>
    db.query<{ n: number; t: string; nothing: string | null; b: Buffer; s: string; flag: boolean; empty: string }>(
      'SELECT $1::int AS n, $2::text AS t, $3::text AS nothing, $4::bytea AS b, $5::text AS s, $6::boolean AS flag, $7::text AS empty',
      values,
    ),
  );
  const row = result.rows[0]!;
  t.equal(row.n, 42);
  t.ok(row.t === text, 'the text is the one sent');
  t.equal(row.nothing, null);
  t.ok(Buffer.compare(row.b, bytes) === 0, 'the bytes are the ones sent');
  t.equal(row.s, 'small ✓');
  t.equal(row.flag, true);
  t.equal(row.empty, '');
  t.ok(Math.max(...sizes) <= CHUNK_BYTES, `no write passes a chunk (largest ${Math.max(...sizes)} bytes)`);
  t.ok(turnBeforeLast, 'other work ran between the chunks');
});

t.test('small parameters and other values are sent as node-postgres sends them', async (t) => {
  t.notOk(chunkedValues([utf8('x'.repeat(CHUNKED_PARAM_BYTES - 1))]), 'under the size: one write');
  t.notOk(chunkedValues([utf8('x'.repeat(CHUNKED_PARAM_BYTES)), ['an', 'array']]), 'a value node-postgres converts');
  t.notOk(chunkedValues([utf8('x'.repeat(CHUNKED_PARAM_BYTES)), new Date()]), 'a date');
  t.notOk(chunkedValues(undefined));
  const { rows } = await db.query<{ t: string }>('SELECT $1::text AS t', [utf8('x'.repeat(CHUNKED_PARAM_BYTES))]);
  t.equal(rows[0]!.t.length, CHUNKED_PARAM_BYTES);
});

t.test("a chunked statement's error rolls back its transaction and leaves the connection usable", async (t) => {
  const big = utf8('1'.repeat(CHUNKED_PARAM_BYTES * 3));
  const failures: Array<[string, unknown[], string]> = [
    // Refused at Bind's execution, after every byte arrived.
    ['SELECT $1::text::int', [big], '22003'],
    // Refused at Parse, while the rest of the statement is still being written.
    ['SELEC $1::text', [big], '42601'],
    // Invalid UTF-8 for a text parameter, refused at Bind.
    ['SELECT $1::text', [new Uint8Array(CHUNKED_PARAM_BYTES).fill(0xff)], '22021'],
  ];
  for (const [sql, values, code] of failures) {
    await t.rejects(
      db.transaction(async (tx) => {
        await tx.query('CREATE TABLE chunked_probe (n int)');
        await tx.query(sql, values);
      }),
      { code },
      sql,
    );
    const { rows } = await db.query<{ present: boolean }>("SELECT to_regclass('chunked_probe') IS NOT NULL AS present");
    t.equal(rows[0]!.present, false, `${code}: the transaction was rolled back`);
    // Outside a transaction too: the pool's client is released and usable.
    await t.rejects(db.query(sql, values), { code });
    const again = await db.query<{ n: number }>('SELECT $1::int AS n, length($2::text) AS l', [7, big]);
    t.equal(again.rows[0]!.n, 7, `${code}: the connection answers the next statement`);
  }
});
