import t from 'tap';
import {
  decodeCursor,
  encodeCursor,
  keysetPage,
  MAX_CURSOR_LENGTH,
  parseLimit,
  parseQueryLimit,
} from '../shared/cursor.ts';
import { isServiceError } from '../shared/errors.ts';

const KEY = 'unit-cursor-key-0123456789abcdef';
const filters = { blob_id: '6f1c2a51-8d1e-4f4b-9a43-0a1b2c3d4e5f', kind: 'node' };

/** The error code `fn` throws, or undefined when it returns. */
function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (!isServiceError(error)) throw error;
    return error.code;
  }
}

t.test('round trip: the position comes back as it went in', async (t) => {
  for (const position of [
    0,
    17,
    ['2025-01-02T03:04:05.678Z', '0b6b1d6e-1f9e-4b7a-8c59-1c2d3e4f5a6b'],
    { n: 3, s: 'é✓' },
    null,
  ]) {
    const cursor = encodeCursor(KEY, 'revisions', filters, position);
    t.match(cursor, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'URL-safe without escaping');
    t.same(decodeCursor(KEY, 'revisions', filters, cursor), position);
  }
});

t.test('filters are compared by value, not by key order', async (t) => {
  const cursor = encodeCursor(KEY, 'events', { a: 1, b: { c: 2, d: 3 } }, 5);
  t.equal(decodeCursor(KEY, 'events', { b: { d: 3, c: 2 }, a: 1 }, cursor), 5);
});

t.test('changing any single character is refused', async (t) => {
  const cursor = encodeCursor(KEY, 'revisions', filters, ['2025-01-02T03:04:05.678Z', 42]);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
  let tried = 0;
  for (let i = 0; i < cursor.length; i++) {
    // Every other character at this position, including ones that decode to the same bits
    // (base64url padding bits) and the separator.
    for (const c of alphabet) {
      if (c === cursor[i]) continue;
      const changed = cursor.slice(0, i) + c + cursor.slice(i + 1);
      tried++;
      if (codeOf(() => decodeCursor(KEY, 'revisions', filters, changed)) !== 'invalid_cursor') {
        t.fail(`position ${i} changed to ${c} was accepted`);
        return;
      }
    }
  }
  t.ok(tried > cursor.length * 60, `tried ${tried} single-character changes`);
});

t.test('flipping each bit of each byte is refused', async (t) => {
  const cursor = encodeCursor(KEY, 'revisions', filters, 7);
  for (let i = 0; i < cursor.length; i++) {
    for (let bit = 0; bit < 8; bit++) {
      const changed = cursor.slice(0, i) + String.fromCharCode(cursor.charCodeAt(i) ^ (1 << bit)) + cursor.slice(i + 1);
      t.equal(
        codeOf(() => decodeCursor(KEY, 'revisions', filters, changed)),
        'invalid_cursor',
        `byte ${i} bit ${bit}`,
      );
    }
  }
});

t.test('truncated, extended and malformed cursors are refused', async (t) => {
  const cursor = encodeCursor(KEY, 'revisions', filters, 7);
  const bad = [
    '',
    '.',
    cursor.slice(0, -1),
    cursor + 'A',
    cursor + '.',
    'x' + cursor,
    cursor.replace('.', ''),
    `${cursor}.${cursor}`,
    cursor.split('.')[0]!,
    `.${cursor.split('.')[1]}`,
    ' ' + cursor,
    cursor + '=',
    'A'.repeat(MAX_CURSOR_LENGTH + 1),
  ];
  for (const value of bad)
    t.equal(
      codeOf(() => decodeCursor(KEY, 'revisions', filters, value)),
      'invalid_cursor',
      JSON.stringify(value.slice(0, 40)),
    );
});

t.test('a forged cursor (own payload, guessed or foreign-key signature) is refused', async (t) => {
  const genuine = encodeCursor(KEY, 'revisions', filters, 7);
  const payload = Buffer.from(JSON.stringify(1_000_000)).toString('base64url');
  t.equal(
    codeOf(() => decodeCursor(KEY, 'revisions', filters, `${payload}.${genuine.split('.')[1]}`)),
    'invalid_cursor',
    'signature of another payload',
  );
  const otherKey = encodeCursor('another-key-entirely-0123456789ab', 'revisions', filters, 7);
  t.equal(
    codeOf(() => decodeCursor(KEY, 'revisions', filters, otherKey)),
    'invalid_cursor',
    'signed with another key',
  );
});

t.test('a cursor transplanted to another listing or filter set is refused', async (t) => {
  const cursor = encodeCursor(KEY, 'revisions', filters, 7);
  t.equal(
    codeOf(() => decodeCursor(KEY, 'list_session_events', filters, cursor)),
    'invalid_cursor',
    'other listing',
  );
  t.equal(
    codeOf(() =>
      decodeCursor(KEY, 'revisions', { ...filters, blob_id: '00000000-0000-4000-8000-000000000000' }, cursor),
    ),
    'invalid_cursor',
    'other filter value',
  );
  t.equal(
    codeOf(() => decodeCursor(KEY, 'revisions', { blob_id: filters.blob_id }, cursor)),
    'invalid_cursor',
    'filter dropped',
  );
  t.equal(
    codeOf(() => decodeCursor(KEY, 'revisions', { ...filters, extra: 1 }, cursor)),
    'invalid_cursor',
    'filter added',
  );
  t.equal(decodeCursor(KEY, 'revisions', filters, cursor), 7, 'still valid where it was issued');
});

t.test("parseQueryLimit: a query string's decimal digits; default, range, refusal without clamping", async (t) => {
  const range = { fallback: 50, max: 200 };
  t.equal(parseQueryLimit(undefined, range), 50);
  t.equal(parseQueryLimit('1', range), 1);
  t.equal(parseQueryLimit('200', range), 200);
  for (const raw of ['0', '201', '-1', '1.5', '1e2', '', ' 5', 'abc', '0x10', ['5'], '99999999999']) {
    t.equal(
      codeOf(() => parseQueryLimit(raw, range)),
      'invalid_limit',
      JSON.stringify(raw),
    );
  }
});

t.test('parseLimit: a JSON number only — "10" is refused, not coerced', async (t) => {
  const range = { fallback: 50, max: 200 };
  t.equal(parseLimit(undefined, range), 50);
  t.equal(parseLimit(30, range), 30);
  t.equal(parseLimit(200, range), 200);
  for (const raw of ['10', '1', 0, 201, 2.5, NaN, null, ['5'], true]) {
    t.equal(
      codeOf(() => parseLimit(raw, range)),
      'invalid_limit',
      JSON.stringify(raw),
    );
  }
});

t.test('keysetPage reports whether rows follow the page', async (t) => {
  t.same(keysetPage([1, 2, 3], 2), { page: [1, 2], last: 2, more: true });
  t.same(keysetPage([1, 2], 2), { page: [1, 2], last: 2, more: false });
  t.same(keysetPage([], 2), { page: [], last: undefined, more: false });
});
