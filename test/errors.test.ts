import { readFile } from 'node:fs/promises';
import t from 'tap';
import { errorCatalog, fail, isServiceError, ServiceError, type ErrorCode } from '../shared/errors.ts';
import { RPC_ERROR, toRpcError } from '../control-plane/ws/json-rpc.ts';

/** One row of the catalogue table in docs/errors.md. */
interface DocRow {
  status: number;
  code: string;
  limit: string;
  rpc: number;
}

const doc = await readFile(new URL('../docs/errors.md', import.meta.url), 'utf8');

/** The rows between the catalogue markers; throws when the table is not where the test expects it. */
function catalogueRows(text: string): DocRow[] {
  const start = text.indexOf('<!-- catalogue:start -->');
  const end = text.indexOf('<!-- catalogue:end -->');
  if (start < 0 || end < start) throw new Error('docs/errors.md lost its catalogue markers');
  const lines = text
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('|'));
  const [header, rule, ...body] = lines.map((line) =>
    line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
  if (header?.join(' ') !== 'HTTP `error` `limit` JSON-RPC When' || !rule?.every((cell) => /^:?-+:?$/.test(cell))) {
    throw new Error(`docs/errors.md catalogue table has an unexpected header: ${header?.join(' | ')}`);
  }
  return body.map((cells) => {
    const [status, code, limit, rpc] = cells;
    const name = /^`([a-z_]+)`$/.exec(code ?? '');
    const rpcCode = /^-32\d{3}/.exec(rpc ?? '');
    if (!name || !rpcCode || !/^\d{3}$/.test(status ?? ''))
      throw new Error(`docs/errors.md: malformed row ${cells.join(' | ')}`);
    return { status: Number(status), code: name[1]!, limit: limit ?? '', rpc: Number(rpcCode[0]) };
  });
}

const rows = catalogueRows(doc);
const catalogueCodes = Object.keys(errorCatalog) as ErrorCode[];

t.test('docs/errors.md lists exactly the catalogue codes, once each', async (t) => {
  const documented = rows.map((row) => row.code);
  t.same([...new Set(documented)].length, documented.length, 'no code is listed twice');
  t.same(
    documented.filter((code) => !Object.hasOwn(errorCatalog, code)),
    [],
    'every documented code is in shared/errors.ts',
  );
  t.same(
    catalogueCodes.filter((code) => !documented.includes(code)),
    [],
    'every catalogue code is documented',
  );
});

t.test("docs/errors.md gives each code the catalogue's HTTP status", async (t) => {
  for (const row of rows) {
    if (!Object.hasOwn(errorCatalog, row.code)) continue;
    t.equal(row.status, errorCatalog[row.code as ErrorCode].status, row.code);
  }
});

t.test('docs/errors.md gives each code the JSON-RPC error code toRpcError answers', async (t) => {
  const internal: unknown[] = [];
  for (const row of rows) {
    if (!Object.hasOwn(errorCatalog, row.code)) continue;
    const code = row.code as ErrorCode;
    const rpc = toRpcError(new ServiceError(code), (error) => internal.push(error));
    t.equal(row.rpc, rpc.code, code);
    // `unavailable` also says when to try again (docs/operations.md, "Losing the database").
    const retry = code === 'unavailable' ? { retry_after: 2 } : {};
    t.same(
      rpc.data,
      { error: code, message: errorCatalog[code].message, http_status: errorCatalog[code].status, ...retry },
      `${code} data`,
    );
  }
  // Only server errors are reported as internal (and logged by the transport).
  t.same(internal.map((error) => (error as ServiceError).code).sort(), ['cursor_record_deleted', 'internal_error']);
});

t.test('docs/errors.md documents every JSON-RPC error code the transport uses', async (t) => {
  for (const [name, code] of Object.entries(RPC_ERROR)) {
    t.match(doc, new RegExp(`^\\| ${code} \\|`, 'm'), `${name} (${code}) has a row`);
  }
});

t.test('limit refusal codes are documented as carrying limit', async (t) => {
  const always = [
    'limit_exceeded',
    'session_object_too_large',
    'session_file_too_large',
    'thread_item_too_large',
    'too_many_files',
    'graph_element_too_large',
    'graph_mutation_too_large',
    'graph_traversal_limit_exceeded',
  ];
  for (const row of rows) {
    if (always.includes(row.code)) t.equal(row.limit, 'always', row.code);
    else if (row.code === 'invalid_blob_type') t.match(row.limit, /^when /, row.code);
    else t.match(row.limit, /^no\b/, row.code);
  }
});

t.test('the catalogue is well formed', async (t) => {
  for (const [code, entry] of Object.entries(errorCatalog)) {
    t.match(code, /^[a-z][a-z_]*[a-z]$/, `${code} is snake_case`);
    t.ok(entry.status >= 400 && entry.status <= 599, `${code} is a 4xx/5xx status`);
    t.ok(entry.message.length > 0 && entry.message.endsWith('.'), `${code} has a sentence as default message`);
  }
});

t.test('ServiceError takes status and default message from the catalogue', async (t) => {
  const error = new ServiceError('not_found');
  t.equal(error.code, 'not_found');
  t.equal(error.status, 404);
  t.equal(error.message, 'No such resource.');
  t.equal(error.name, 'ServiceError');
  t.ok(error instanceof Error);
  t.same(error.extras, {});
  t.equal(new ServiceError('conflict', 'The session is being deleted.').message, 'The session is being deleted.');
});

t.test('toEnvelope answers status, error and message, and nothing else without extras', async (t) => {
  const envelope = new ServiceError('forbidden', 'This needs admin on the blob.').toEnvelope();
  t.same(envelope, { status: 'failure', error: 'forbidden', message: 'This needs admin on the blob.' });
  t.same(Object.keys(envelope), ['status', 'error', 'message'], 'status first, as in every envelope');
  t.same(new ServiceError('internal_error').toEnvelope(), {
    status: 'failure',
    error: 'internal_error',
    message: 'An unexpected error occurred.',
  });
});

t.test('toEnvelope carries limit and errors extras', async (t) => {
  const limit = { id: 'workflow.sessions_per_revision', value: 30, held: 30 };
  t.same(new ServiceError('limit_exceeded', undefined, { limit }).toEnvelope(), {
    status: 'failure',
    error: 'limit_exceeded',
    message: 'A limit refused the request.',
    limit,
  });
  const errors = [{ code: 'start_not_found', node: null, field: 'start', message: 'start names no node' }];
  t.same(
    new ServiceError('invalid_definition', 'The graph failed validation with 1 error (see errors).', {
      errors,
    }).toEnvelope(),
    {
      status: 'failure',
      error: 'invalid_definition',
      message: 'The graph failed validation with 1 error (see errors).',
      errors,
    },
  );
});

t.test('toEnvelope never leaks the cause or the stack', async (t) => {
  const cause = new Error('duplicate key value violates unique constraint "orgs_alias_key" SELECT secret');
  const error = new ServiceError('alias_taken', 'That alias is already used by another organization.', {}, { cause });
  t.equal(error.cause, cause, 'the cause is kept for logs');
  const text = JSON.stringify(error.toEnvelope());
  t.notMatch(text, /unique constraint|SELECT|at .*\.ts/);
  t.same(JSON.parse(text), {
    status: 'failure',
    error: 'alias_taken',
    message: 'That alias is already used by another organization.',
  });
});

t.test('fail throws a ServiceError with its extras', async (t) => {
  const limit = { id: 'workflow.thread_item_files', value: 10 };
  t.throws(() => fail('too_many_files', 'The item names 11 files; workflow.thread_item_files is 10.', { limit }), {
    name: 'ServiceError',
    code: 'too_many_files',
    status: 400,
    extras: { limit },
  });
});

t.test('isServiceError matches on a catalogued code, not on the class', async (t) => {
  t.ok(isServiceError(new ServiceError('unauthorized')));
  // An error rebuilt from {code, message} (e.g. across a worker boundary) still counts.
  t.ok(isServiceError(Object.assign(new Error('gone'), { code: 'not_found' })));
  t.notOk(
    isServiceError(Object.assign(new Error('x'), { code: 'code_timeout' })),
    'a sandbox code is not a catalogue code',
  );
  t.notOk(isServiceError(Object.assign(new Error('x'), { code: 'toString' })), 'inherited keys are not codes');
  t.notOk(isServiceError({ code: 'not_found', message: 'plain object' }), 'not an Error');
  t.notOk(isServiceError(null));
  t.notOk(isServiceError('not_found'));
});
