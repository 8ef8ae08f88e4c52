import t from 'tap';
import { z } from 'zod';
import { readRecordPage, RECORD_PAGE_SIZE, recordCursorParams } from '../control-plane/workflow/record-cursor.ts';
import {
  newestFirstSql,
  olderThanSql,
  positionColumnsSql,
  type RecordPosition,
  type RecordSource,
} from '../control-plane/sql/table-listing.ts';
import { isServiceError } from '../shared/errors.ts';

// Unit tests of the record-cursor logic against an in-memory listing; the SQL side is exercised
// through list_sessions in test/sessions.test.ts.

interface Row {
  id: string;
  at: string;
}

function id(n: number): string {
  return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
}

/** A listing over `rows` that behaves like the SQL: newest first by (at, id), strictly older than the position. */
function memorySource(
  rows: Row[],
): RecordSource<Row> & { reads: Array<{ after: RecordPosition | undefined; count: number }> } {
  const newestFirst = (a: Row, b: Row) => (a.at === b.at ? (a.id < b.id ? 1 : -1) : a.at < b.at ? 1 : -1);
  const reads: Array<{ after: RecordPosition | undefined; count: number }> = [];
  return {
    reads,
    async locate(wanted) {
      const row = rows.find((r) => r.id === wanted);
      return row && { at: row.at, id: row.id };
    },
    async read(after, count) {
      reads.push({ after, count });
      return [...rows]
        .sort(newestFirst)
        .filter((r) => after === undefined || r.at < after.at || (r.at === after.at && r.id < after.id))
        .slice(0, count);
    },
  };
}

function rowsOf(count: number, sameInstant = false): Row[] {
  return Array.from({ length: count }, (_, i) => ({
    id: id(i + 1),
    at: sameInstant ? '2025-01-01T00:00:00.000000Z' : `2025-01-01T00:00:${String(i).padStart(2, '0')}.000000Z`,
  }));
}

async function pageAll(source: RecordSource<Row>): Promise<{ pages: Row[][]; lasts: Array<string | null> }> {
  const pages: Row[][] = [];
  const lasts: Array<string | null> = [];
  let start: string | undefined;
  for (let guard = 0; guard < 100; guard += 1) {
    const page = await readRecordPage(source, start);
    pages.push(page.rows);
    lasts.push(page.last_session_id);
    if (page.last_session_id === null) return { pages, lasts };
    start = page.last_session_id;
  }
  throw new Error('the listing never ended');
}

t.test('25 records page as 10, 10, 5, newest first, each once, and the last page says so', async (t) => {
  const rows = rowsOf(25);
  const { pages, lasts } = await pageAll(memorySource(rows));
  t.same(
    pages.map((p) => p.length),
    [10, 10, 5],
  );
  t.same(
    pages.flat().map((r) => r.id),
    rows.map((r) => r.id).reverse(),
  );
  t.same(lasts, [id(16), id(6), null], 'last_session_id is the id of the last row of the page');
  t.equal(RECORD_PAGE_SIZE, 10);
});

t.test('exactly one page: reading one row past it answers null at once, not a trailing empty page', async (t) => {
  const source = memorySource(rowsOf(10));
  const page = await readRecordPage(source, undefined);
  t.equal(page.rows.length, 10);
  t.equal(page.last_session_id, null);
  t.same(source.reads, [{ after: undefined, count: 11 }]);
  const eleven = await readRecordPage(memorySource(rowsOf(11)), undefined);
  t.equal(eleven.rows.length, 10);
  t.equal(eleven.last_session_id, id(2));
});

t.test('an empty listing is one empty, exhausted page', async (t) => {
  t.same(await readRecordPage(memorySource([]), undefined), { rows: [], last_session_id: null });
});

t.test('records created at the same instant page by id, with no repeats or gaps', async (t) => {
  const rows = rowsOf(23, true);
  const { pages } = await pageAll(memorySource(rows));
  t.same(
    pages.map((p) => p.length),
    [10, 10, 3],
  );
  t.same(new Set(pages.flat().map((r) => r.id)).size, 23);
});

t.test('a start record that is gone (or never in this listing) is cursor_record_deleted, a 500', async (t) => {
  const rows = rowsOf(15);
  const source = memorySource(rows);
  const first = await readRecordPage(source, undefined);
  rows.splice(
    rows.findIndex((r) => r.id === first.last_session_id),
    1,
  );
  for (const start of [first.last_session_id!, id(999)]) {
    const error = await readRecordPage(source, start).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(isServiceError(error));
    t.equal((error as { code: string }).code, 'cursor_record_deleted');
    t.equal((error as { status: number }).status, 500);
  }
  t.equal(source.reads.length, 1, 'nothing is read after a failed locate');
});

t.test('a record deleted after it was located does not disturb the page', async (t) => {
  const rows = rowsOf(15);
  const source = memorySource(rows);
  const first = await readRecordPage(source, undefined);
  const locate = source.locate.bind(source);
  source.locate = async (wanted) => {
    const found = await locate(wanted);
    rows.splice(
      rows.findIndex((r) => r.id === wanted),
      1,
    );
    return found;
  };
  const second = await readRecordPage(source, first.last_session_id!);
  t.same(
    second.rows.map((r) => r.id),
    [id(5), id(4), id(3), id(2), id(1)],
  );
});

t.test('the shared params: limit refused with a reason, start_session_id a string with an id shape', async (t) => {
  const schema = z.strictObject({ ...recordCursorParams });
  t.ok(schema.safeParse({}).success);
  t.ok(schema.safeParse({ start_session_id: id(1) }).success);
  for (const limit of [10, 5, null, '10']) {
    const result = schema.safeParse({ limit });
    t.notOk(result.success, `limit ${JSON.stringify(limit)}`);
    t.match(result.error?.issues[0]?.message, /limit is not accepted/);
  }
  t.notOk(schema.safeParse({ start_session_id: null }).success, 'null is not a cursor');
  t.notOk(schema.safeParse({ start_session_id: 'my-session' }).success, 'only ids are handed out');
  t.notOk(
    schema.safeParse({ start_session_id: '0000000A-0000-4000-8000-000000000001' }).success,
    'an upper-case UUID is not an id',
  );
});

t.test('SQL fragments', async (t) => {
  t.same(olderThanSql('s', undefined, 3), { sql: 'TRUE', params: [] });
  t.same(olderThanSql('e', { at: '2025-01-01T00:00:00.000001Z', id: id(1) }, 4), {
    sql: '(e.created_at, e.id) < ($4::timestamptz, $5::uuid)',
    params: ['2025-01-01T00:00:00.000001Z', id(1)],
  });
  t.equal(newestFirstSql('s'), 'ORDER BY s.created_at DESC, s.id DESC');
  t.match(positionColumnsSql('s'), /\.US"Z"'\) AS at, s\.id::text AS id$/, 'the position keeps microseconds');
});
