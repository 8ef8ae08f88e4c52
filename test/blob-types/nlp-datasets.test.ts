/**
 * NLP datasets (docs/blob-types.md "NLP datasets"): upload_records (a JSON array, or JSON Lines
 * over REST) and list_records with the opaque cursor on a `svc.dataset.nlp` revision; bad records
 * refused with their index and nothing written; the count on Get Revision; nlp.enabled checked.
 */
import t from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous } from '../helpers/app.ts';
import { createBlob, createOrg } from '../helpers/resources.ts';
import { command } from '../helpers/runner.ts';

const { app, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const org = await createOrg(app, alice);
const { revision } = await createBlob(app, alice, org.id, { type: 'svc.dataset.nlp' });
const post = (name: string, body: unknown, headers?: Record<string, string>) =>
  call(app, 'POST', `/v1/revisions/${revision.id}/${name}`, {
    as: alice,
    body,
    ...(headers ? { headers: { ...alice.headers, ...headers } } : {}),
  });

async function count(): Promise<number> {
  return (await call(app, 'GET', `/v1/revisions/${revision.id}`, { as: alice })).body.revision.counts.records;
}

t.test('120 records page back exactly once each, in upload order', async (t) => {
  const first = await command(app, alice, revision.id, 'upload_records', {
    records: Array.from({ length: 100 }, (_, i) => ({
      text: `sentence ${i}`,
      labels: i % 2 ? ['odd'] : ['even'],
      meta: { i },
    })),
  });
  t.same(first, { status: 'success', uploaded: 100, total: 100 });
  const lines = Array.from({ length: 20 }, (_, i) => JSON.stringify({ text: `line ${i}` })).join('\n');
  const jsonl = await call(app, 'POST', `/v1/revisions/${revision.id}/upload_records`, {
    headers: { ...alice.headers, 'content-type': 'application/x-ndjson' },
    body: `${lines}\n`,
  });
  t.equal(jsonl.status, 200, JSON.stringify(jsonl.body));
  t.same(jsonl.body, { status: 'success', uploaded: 20, total: 120 });
  t.equal(await count(), 120);

  const seen: string[] = [];
  let cursor: string | null | undefined;
  let pages = 0;
  do {
    const page = await command(app, alice, revision.id, 'list_records', { limit: 50, ...(cursor ? { cursor } : {}) });
    seen.push(...page.records.map((r: { text: string }) => r.text));
    cursor = page.cursor;
    pages++;
  } while (cursor !== null);
  t.equal(pages, 3);
  t.same(seen, [
    ...Array.from({ length: 100 }, (_, i) => `sentence ${i}`),
    ...Array.from({ length: 20 }, (_, i) => `line ${i}`),
  ]);
  const one = await command(app, alice, revision.id, 'list_records', { limit: 1 });
  t.match(one.records[0], { id: Number, text: 'sentence 0', labels: ['even'], meta: { i: 0 }, created_at: String });
  const tampered = await post('list_records', { cursor: `${one.cursor}x` });
  t.equal(tampered.status, 400);
  t.equal(tampered.body.error, 'invalid_cursor');
  t.equal((await post('list_records', { limit: 0 })).body.error, 'invalid_limit');
});

t.test('bad records are refused with their index; nothing of the call is written', async (t) => {
  const before = await count();
  const cases: Array<[unknown, RegExp]> = [
    [[{ text: 'ok' }, 'just a string'], /records\[1\]: must be an object/],
    [[{ text: 'ok' }, { text: 'ok' }, { text: 42 }], /records\[2\]: text must be a string/],
    [[{ text: 'ok', labels: 'spam' }], /records\[0\]: labels/],
    [[{ text: 'ok', meta: [1, 2] }], /records\[0\]: meta must be an object/],
    [[{ text: 'ok', colour: 'red' }], /records\[0\]: unknown field "colour"/],
    [[], /at least one/],
    ['not an array', /records: an array/],
    [[{ text: 'x'.repeat(65_537) }], /records\[0\]: text is longer/],
  ];
  for (const [records, message] of cases) {
    const res = await post('upload_records', { records });
    t.equal(res.status, 400, String(message));
    t.match(res.body, { status: 'failure', error: 'invalid_request_body', message });
  }
  const badLine = await call(app, 'POST', `/v1/revisions/${revision.id}/upload_records`, {
    headers: { ...alice.headers, 'content-type': 'application/x-ndjson' },
    body: '{"text":"fine"}\n{not json}\n',
  });
  t.equal(badLine.status, 400);
  t.match(badLine.body.message, /records\[1\]: the line is not JSON/);
  const elsewhere = await call(app, 'POST', `/v1/revisions/${revision.id}/list_records`, {
    headers: { ...alice.headers, 'content-type': 'application/x-ndjson' },
    body: '{}\n',
  });
  t.equal(elsewhere.status, 400, 'JSON Lines is for upload_records only');
  t.equal(await count(), before, 'nothing written');
});

t.test('a JSON Lines body passes the guard of JSON bodies: storable text, UTF-8, bounded depth', async (t) => {
  const before = await count();
  const deep = '{"text":"x","meta":{"a":' + '['.repeat(70) + ']'.repeat(70) + '}}';
  const cases: Array<[string, string | Buffer, RegExp]> = [
    ['U+0000', '{"text":"a\\u0000b"}\n', /U\+0000|unpaired|records\[0\]/],
    ['a lone surrogate', '{"text":"a\\ud800b"}\n', /records\[0\]/],
    [
      'invalid UTF-8',
      Buffer.concat([Buffer.from('{"text":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n')]),
      /UTF-8/,
    ],
    ['70 levels deep', `${deep}\n`, /deep|depth|levels/],
  ];
  for (const [what, payload, message] of cases) {
    const res = await app.inject({
      method: 'POST',
      url: `/v1/revisions/${revision.id}/upload_records`,
      headers: { ...alice.headers, 'content-type': 'application/x-ndjson' },
      payload,
    });
    t.equal(res.statusCode, 400, what);
    t.match(res.json(), { status: 'failure', error: 'invalid_request_body', message }, what);
  }
  t.equal(await count(), before, 'nothing written');
});

t.test('nlp.enabled is checked on every call', async (t) => {
  await setOverride(app, 'nlp.enabled', 'org', org.id, false);
  const off = await post('upload_records', { records: [{ text: 'x' }] });
  t.equal(off.status, 400);
  t.same(off.body.limit, { id: 'nlp.enabled', value: false });
  await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'nlp.enabled' AND target_type = 'org'`);
  t.equal((await post('list_records', {})).status, 200);
});

t.test('an upload larger than one insert statement keeps every record whole and in order', async (t) => {
  const { revision: big } = await createBlob(app, alice, org.id, { type: 'svc.dataset.nlp' });
  const n = 2345;
  const records = Array.from({ length: n }, (_, i) => ({
    text: `row ${i}`,
    labels: i % 3 ? [`l${i % 3}`] : [],
    ...(i % 2 ? { meta: { i } } : {}),
  }));
  t.same(await command(app, alice, big.id, 'upload_records', { records }), {
    status: 'success',
    uploaded: n,
    total: n,
  });
  const seen: Array<{ text: string; labels: string[]; meta: unknown }> = [];
  let cursor: string | null | undefined;
  do {
    const page = await command(app, alice, big.id, 'list_records', { limit: 200, ...(cursor ? { cursor } : {}) });
    seen.push(...page.records);
    cursor = page.cursor;
  } while (cursor !== null);
  t.same(
    seen.map((r) => [r.text, r.labels, r.meta]),
    records.map((r, i) => [r.text, r.labels, i % 2 ? { i } : null]),
  );
});
