/**
 * Large command bodies are read by a body thread (control-plane/bodies/), small ones by the event
 * loop; a client cannot tell which. Each input here is sent twice, as it is (under
 * HEAVY_BODY_BYTES: the event loop) and padded with whitespace past it (a body thread), and both
 * answers must be the same: the refusals (status, code, message, path), the records and objects
 * stored and read back. Uploads of 8 MiB go through the thread path only, against their
 * documented answers.
 */
import t, { type Test } from 'tap';
import { buildTestApp, signInAnonymous, type Caller } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import { createSession } from './helpers/session-contents.ts';

/** Bodies of at least this many bytes are heavy, so read by the body thread. */
const HEAVY = 4096;
const { app } = await buildTestApp(t, { HEAVY_BODY_BYTES: String(HEAVY) });

const caller: Caller = await signInAnonymous(app);
const org = await createOrg(app, caller);

interface Answer {
  status: number;
  type: string | undefined;
  /** The body as sent, byte for byte (as text). */
  text: string;
  body: any;
}

/**
 * POSTs `text` (with `type`) to the command; `pad` adds whitespace the body's format ignores, up
 * to a heavy body, false checks that it is small, 'as-is' sends it as it is.
 */
async function post(
  revision: string,
  command: string,
  text: string | Buffer,
  pad: boolean | 'as-is',
  type = 'application/json',
  headers: Record<string, string> = {},
): Promise<Answer> {
  const filler = type === 'application/json' ? ' ' : '\n';
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const payload =
    pad === true ? Buffer.concat([bytes, Buffer.from(filler.repeat(Math.max(0, HEAVY - bytes.length)))]) : bytes;
  if (pad !== 'as-is' && pad !== payload.length >= HEAVY)
    throw new Error(`the ${pad ? 'padded' : 'plain'} body is on the wrong side`);
  const res = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${revision}/${command}`,
    headers: { ...caller.headers, 'content-type': type, ...headers },
    payload,
  });
  return { status: res.statusCode, type: res.headers['content-type'], text: res.body, body: res.json() };
}

/** Both paths' answers to one input, which must be the same; returns them. */
async function both(
  t: Test,
  revision: string | [string, string],
  command: string,
  text: string | Buffer,
  type?: string,
): Promise<[Answer, Answer]> {
  const [small, large] = typeof revision === 'string' ? [revision, revision] : revision;
  const plain = await post(small, command, text, false, type);
  const padded = await post(large, command, text, true, type);
  t.same(padded, plain, `${command}: the same answer either way (${plain.status} ${plain.body.error ?? ''})`);
  return [plain, padded];
}

async function nlpRevision(): Promise<string> {
  return (await createBlob(app, caller, org.id, { type: 'svc.dataset.nlp' })).revision.id;
}

async function listAll(revision: string): Promise<unknown[]> {
  const res = await post(revision, 'list_records', JSON.stringify({ limit: 200 }), false);
  return res.body.records.map(({ id, created_at, ...record }: Record<string, unknown>) => record);
}

// Text that escapes in an array literal and in JSON: quotes, backslashes, braces, commas, NULL.
const TRICKY = [
  'plain',
  'a "quoted" word',
  'back\\slash \\" and \\\\',
  '{braces},{and},commas',
  'NULL',
  '',
  'ünïcödé ✓ 𝄞 emoji 🎉',
  'line\nbreak\ttab',
];
const RECORDS = TRICKY.map((text, i) => ({
  text,
  ...(i % 2 === 0 ? { labels: ['x', `l"${i}\\`, 'ü'] } : {}),
  ...(i % 3 === 0 ? { meta: { n: i, nested: { q: '"', list: [1, 2.5, null, 'NULL'] } } } : {}),
  ...(i === 1 ? { meta: null } : {}),
}));

t.test('upload_records: the same records stored either way, JSON and JSON Lines', async (t) => {
  const [small, large] = [await nlpRevision(), await nlpRevision()];
  await both(t, [small, large], 'upload_records', JSON.stringify({ records: RECORDS }));
  const lines = RECORDS.map((r) => JSON.stringify(r)).join('\n');
  await both(t, [small, large], 'upload_records', lines, 'application/x-ndjson');
  const stored = await listAll(small);
  t.equal(stored.length, RECORDS.length * 2);
  t.same(await listAll(large), stored, 'the records read back are the same');
  t.same(
    stored.slice(0, RECORDS.length),
    RECORDS.map((r) => ({ labels: [], meta: null, ...r })),
  );
});

t.test('upload_records: every refusal the same either way', async (t) => {
  const rev = await nlpRevision();
  const refusals: Array<[string, string | Buffer, string?]> = [
    ['not UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])],
    ['not JSON', '{"records": [}'],
    ['JSON null', 'null'],
    ['too deep', `{"records": [{"text": "a", "meta": ${'['.repeat(70)}${']'.repeat(70)}}]}`],
    ['U+0000', JSON.stringify({ records: [{ text: 'a\u0000b' }] })],
    ['lone surrogate', '{"records": [{"text": "a\\ud800b"}]}'],
    ['prototype key', '{"records": [], "__proto__": {"x": 1}}'],
    ['constructor.prototype', '{"records": [], "constructor": {"prototype": {"x": 1}}}'],
    ['an unknown key', JSON.stringify({ records: [{ text: 'a' }], extra: { deep: [1, 2, 3] } })],
    ['records not an array', JSON.stringify({ records: { text: 'a' } })],
    ['no records', JSON.stringify({})],
    ['no record', JSON.stringify({ records: [] })],
    ['a bad record', JSON.stringify({ records: [{ text: 'a' }, { text: 'b', labels: ['x'.repeat(300)] }] })],
    ['an unknown field', JSON.stringify({ records: [{ text: 'a' }, { text: 'b', colour: 'red' }] })],
    ['params an array', JSON.stringify([{ text: 'a' }])],
    ['a line not JSON', '{"text": "a"}\n{"text": \n', 'application/x-ndjson'],
    ['a line too deep', `{"text": "a", "meta": ${'['.repeat(70)}${']'.repeat(70)}}`, 'application/x-ndjson'],
    ['lines not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), 'application/x-ndjson'],
    ['a bad line record', '{"text": "a"}\n{"text": 5}', 'application/x-ndjson'],
  ];
  for (const [what, text, type] of refusals) {
    const [plain] = await both(t, rev, 'upload_records', text, type);
    t.equal(plain.status, 400, `${what}: refused`);
  }
  const [lines] = await both(t, rev, 'list_records', '{"text": "a"}', 'application/x-ndjson');
  t.match(lines.body.message, /upload_records only/, 'JSON Lines to another command');
  t.same(await listAll(rev), [], 'nothing stored');
});

t.test('upload_records with an idempotency key: stored once, replayed, either way', async (t) => {
  const rev = await nlpRevision();
  const body = JSON.stringify({ records: RECORDS });
  const key = { 'idempotency-key': 'large-key-1' };
  const first = await post(rev, 'upload_records', body, true, 'application/json', key);
  const again = await post(rev, 'upload_records', body, false, 'application/json', key);
  t.equal(first.status, 200);
  t.same(again, first, 'the retry (a small body of the same params) gets the stored answer');
  t.equal((await listAll(rev)).length, RECORDS.length);
});

t.test('upload_session_object: the same object stored and answered either way', async (t) => {
  const flow = await createBlob(app, caller, org.id, { type: 'svc.compute.workflow' });
  const rev = flow.revision.id;
  const session = await createSession(app, caller, rev);
  // Keys jsonb orders and JS orders again (integer-like first), numbers it normalizes.
  const value = {
    b: 1,
    '10': 'ten',
    '2': 'two',
    aa: [1.0, 1e21, -0, 2.5e-7, 123456789012345680000],
    a: { z: null, é: 'ü', '"q"': '\\' },
    text: TRICKY,
  };
  const object = (alias: string, v: unknown = value) => JSON.stringify({ session_id: session.id, alias, value: v });
  const plain = await post(rev, 'upload_session_object', object('plain-one'), false);
  const padded = await post(rev, 'upload_session_object', object('padded-one'), true);
  t.equal(plain.status, 200);
  const strip = ({ id, alias, created_at, updated_at, ...rest }: Record<string, unknown>) => rest;
  t.same(strip(padded.body.object), strip(plain.body.object), 'the same value and size answered');
  // The value's text in the answer, byte for byte: it comes before `size` in the record.
  const valueText = (answer: Answer) =>
    answer.text.slice(answer.text.indexOf('"value":'), answer.text.indexOf(',"size":'));
  t.equal(valueText(padded), valueText(plain), 'the same text, keys in the same order');
  t.equal(padded.type, plain.type, 'the same content type');
  t.match(valueText(plain), /^"value":\{"2":"two","10":"ten","a":/, 'keys as jsonb orders them, integer-like first');
  const list = await post(rev, 'list_session_objects', JSON.stringify({ session_id: session.id }), false);
  const [a, b] = list.body.objects;
  t.same(strip(a), strip(b), 'read back the same');

  const refusals: Array<[string, string]> = [
    ['no value', JSON.stringify({ session_id: session.id, alias: 'no-value' })],
    ['a bad alias', object('A')],
    ['an unknown key', JSON.stringify({ session_id: session.id, alias: 'extra', value: 1, other: [1] })],
    ['a bad session id', JSON.stringify({ session_id: { x: 1 }, alias: 'bad-session', value: 1 })],
    ['U+0000 in the value', object('nul', { s: 'a\u0000' })],
  ];
  for (const [what, text] of refusals) {
    const [answer] = await both(t, rev, 'upload_session_object', text);
    t.equal(answer.status, 400, `${what}: refused`);
  }
  const [unknownSession] = await both(
    t,
    rev,
    'upload_session_object',
    JSON.stringify({ session_id: '00000000-0000-4000-8000-000000000000', alias: 'nowhere', value: 1 }),
  );
  t.equal(unknownSession.status, 404);
});

t.test('8 MiB bodies through the thread: ceilings answered as documented', async (t) => {
  const flow = await createBlob(app, caller, org.id, { type: 'svc.compute.workflow' });
  const session = await createSession(app, caller, flow.revision.id);
  const tooLarge = await post(
    flow.revision.id,
    'upload_session_object',
    JSON.stringify({ session_id: session.id, alias: 'huge', value: 'o'.repeat(5_242_880) }),
    'as-is',
  );
  t.equal(tooLarge.status, 400);
  t.equal(tooLarge.body.error, 'session_object_too_large');
  t.same(tooLarge.body.limit, { id: 'workflow.session_object_bytes', value: 5_242_880 });

  const rev = await nlpRevision();
  const many = JSON.stringify({ records: Array.from({ length: 10_001 }, (_, i) => ({ text: `${i}` })) });
  const refused = await post(rev, 'upload_records', many, 'as-is');
  t.equal(refused.status, 400);
  t.match(refused.body.message, /at most 10000 per call, got 10001/);
  const full = JSON.stringify({
    records: Array.from({ length: 10_000 }, (_, i) => ({ text: `${i} ${'x'.repeat(700)}` })),
  });
  const stored = await post(rev, 'upload_records', full, 'as-is');
  t.same([stored.status, stored.body], [200, { status: 'success', uploaded: 10_000, total: 10_000 }]);
  const over = await post(rev, 'upload_records', '{"records": "x"}' + ' '.repeat(8 * 1024 * 1024), 'as-is');
  t.equal(over.status, 413, 'past the route body limit');
  t.equal(over.body.error, 'payload_too_large');
});

t.test('megabytes written to PostgreSQL and answered in chunks arrive intact', async (t) => {
  // Statements with parameters of 256 KiB or more are written in chunks of 256 KiB
  // (shared/db/chunked-query.ts), a session object's answer a piece of 256 KiB per turn
  // (control-plane/reply.ts PiecedAnswer): every boundary here falls somewhere in text of
  // multi-byte characters and escapes, and nothing may be lost, doubled or split wrongly.
  const unit = 'é😀"\\,{}€ NULL ';
  const rev = await nlpRevision();
  const records = Array.from({ length: 150 }, (_, i) => ({
    text: `${i}:` + unit.repeat(1500 + i),
    labels: [`l${i}`, unit.repeat(3)],
    ...(i % 2 === 0 ? { meta: { i, s: unit.repeat(100) } } : {}),
  }));
  const body = JSON.stringify({ records });
  t.ok(Buffer.byteLength(body) > 4 * 1024 * 1024, 'the text literal spans many chunks');
  const stored = await post(rev, 'upload_records', body, 'as-is');
  t.same([stored.status, stored.body], [200, { status: 'success', uploaded: 150, total: 150 }]);
  const back = await listAll(rev);
  t.equal(back.length, records.length);
  t.ok(
    back.every((r, i) => JSON.stringify(r) === JSON.stringify({ ...records[i], meta: records[i]!.meta ?? null })),
    'every record read back as sent',
  );

  const flow = await createBlob(app, caller, org.id, { type: 'svc.compute.workflow' });
  const session = await createSession(app, caller, flow.revision.id);
  const value = { a: unit.repeat(60_000), b: [unit, 1, null] };
  const res = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${flow.revision.id}/upload_session_object`,
    headers: { ...caller.headers, 'content-type': 'application/json' },
    payload: JSON.stringify({ session_id: session.id, alias: 'chunked', value }),
  });
  t.equal(res.statusCode, 200);
  t.equal(Number(res.headers['content-length']), res.rawPayload.length, 'the announced length is the sent one');
  t.same(res.json().object.value, value, 'answered as sent');
  const list = await post(flow.revision.id, 'list_session_objects', JSON.stringify({ session_id: session.id }), false);
  t.same(list.body.objects[0].value, value, 'stored as sent');
});
