import t from 'tap';
import { buildTestApp } from './helpers/app.ts';
import {
  advisoryWaiters,
  createSession,
  markDeleting,
  sessionEvents,
  tracked,
  until,
  VIAS,
  type Transports,
  sessionContentFixture,
} from './helpers/session-contents.ts';
import { postThreadItem, threadItemLimits } from '../shared/session/thread-writes.ts';

const { app } = await buildTestApp(t);
const { alice, blob, revision, as, asReader, asStranger } = await sessionContentFixture(t, app);

const ITEM_BYTES = 65_536;
const ITEM_FILES = 10;

/** Text that makes the item as stored exactly `bytes` long serialized. */
function textOfSize(bytes: number): string {
  const overhead = Buffer.byteLength(JSON.stringify({ text: '', data: null, files: [] }));
  return 'x'.repeat(bytes - overhead);
}

async function post(
  via: 'rest' | 'rpc',
  sessionId: string,
  fields: Record<string, unknown>,
  transports: Transports = as,
) {
  return transports.run(via, revision.id, 'post_session_thread_item', { session_id: sessionId, ...fields });
}

async function walk(sessionId: string, filter: Record<string, unknown>, limit: number): Promise<string[]> {
  const texts: string[] = [];
  let cursor: string | null | undefined;
  let pages = 0;
  do {
    const params: Record<string, unknown> = { session_id: sessionId, ...filter, limit };
    if (cursor) params.cursor = cursor;
    const page = await as.run(pages % 2 === 0 ? 'rest' : 'rpc', revision.id, 'list_session_thread_items', params);
    if (page.status !== 200) throw new Error(`listing failed: ${JSON.stringify(page.body)}`);
    texts.push(...page.body.thread_items.map((i: any) => i.text));
    cursor = page.body.cursor;
    pages += 1;
  } while (cursor !== null && pages < 500);
  return texts;
}

for (const via of VIAS) {
  t.test(`${via}: post and list`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const res = await post(via, session.id, { text: 'hello', data: { score: 3 } });
    t.equal(res.status, 200);
    const item = res.body.thread_item;
    t.match(item, {
      session_id: session.id,
      thread: 'main',
      text: 'hello',
      data: { score: 3 },
      files: [],
      author_id: alice.user.id,
      execution_id: null,
    });
    t.same(Object.keys(item).sort(), [
      'author_id',
      'created_at',
      'data',
      'execution_id',
      'files',
      'id',
      'session_id',
      'text',
      'thread',
    ]);
    const dataOnly = await post(via, session.id, { thread: 'review-2', data: [1, 2] });
    t.match(dataOnly.body.thread_item, { thread: 'review-2', text: null, data: [1, 2] });

    const listed = await asReader.run(via, revision.id, 'list_session_thread_items', { session_id: session.id });
    t.equal(listed.status, 200);
    t.same(listed.body.thread_items, [item, dataOnly.body.thread_item], 'every thread, in posting order');
    t.equal(listed.body.cursor, null);
    const main = await asReader.run(via, revision.id, 'list_session_thread_items', {
      session_id: session.id,
      thread: 'main',
    });
    t.same(main.body.thread_items, [item]);

    const events = await sessionEvents(app, session.id, 'thread.item_posted');
    t.same(
      events.map((e) => e.attributes),
      [
        { thread_item_id: item.id, thread: 'main', files: 0 },
        { thread_item_id: dataOnly.body.thread_item.id, thread: 'review-2', files: 0 },
      ],
    );
  });

  t.test(`${via}: thread_item_bytes is measured serialized over text, data and files`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const exact = await post(via, session.id, { text: textOfSize(ITEM_BYTES) });
    t.equal(exact.status, 200, 'exactly the ceiling is accepted');
    const over = await post(via, session.id, { text: textOfSize(ITEM_BYTES + 1) });
    t.equal(over.status, 400);
    t.equal(over.body.error, 'thread_item_too_large');
    t.same(over.body.limit, { id: 'workflow.thread_item_bytes', value: ITEM_BYTES });
    if (via === 'rpc') t.equal(over.rpcCode, -32001);
    // The data counts too: small text, data past the ceiling.
    const byData = await post(via, session.id, { text: 'hi', data: { blob: 'y'.repeat(ITEM_BYTES) } });
    t.equal(byData.body.error, 'thread_item_too_large');
    t.same(byData.body.limit, { id: 'workflow.thread_item_bytes', value: ITEM_BYTES });
    const listed = await as.run(via, revision.id, 'list_session_thread_items', { session_id: session.id });
    t.equal(listed.body.thread_items.length, 1, 'refused posts store nothing');
  });

  t.test(`${via}: files`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const other = await createSession(app, alice, revision.id);
    const files = Array.from({ length: ITEM_FILES + 1 }, (_, i) => `file-${i}`);
    for (const alias of files) {
      const res = await as.upload(via, revision.id, { session_id: session.id, alias }, Buffer.from(alias));
      t.equal(res.status, 200);
    }
    await as.run(via, revision.id, 'upload_session_object', { session_id: session.id, alias: 'an-object', value: 1 });
    await as.upload(via, revision.id, { session_id: other.id, alias: 'elsewhere' }, Buffer.from('x'));

    const ten = await post(via, session.id, { text: 'ten', files: files.slice(0, ITEM_FILES) });
    t.equal(ten.status, 200, 'the ceiling itself is allowed');
    t.same(ten.body.thread_item.files, files.slice(0, ITEM_FILES));
    const eleven = await post(via, session.id, { text: 'eleven', files });
    t.equal(eleven.status, 400);
    t.equal(eleven.body.error, 'too_many_files');
    t.same(eleven.body.limit, { id: 'workflow.thread_item_files', value: ITEM_FILES });

    for (const [name, aliases] of [
      ['no such alias', ['file-0', 'missing']],
      ['an object, not a file', ['an-object']],
      ['a file of another session', ['elsewhere']],
      ['a file named twice', ['file-0', 'file-0']],
      ['not an alias', ['Not An Alias']],
    ] as const) {
      const res = await post(via, session.id, { text: name, files: aliases });
      t.equal(res.status, 400, name);
      t.equal(res.body.error, 'invalid_request_body', name);
    }
    const filesOnly = await post(via, session.id, { files: ['file-3'] });
    t.match(filesOnly.body.thread_item, { text: null, data: null, files: ['file-3'] });
  });

  t.test(`${via}: params`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    for (const [name, fields] of [
      ['empty item', {}],
      ['empty text only', { text: '' }],
      ['null data only', { data: null }],
      ['upper-case thread', { thread: 'Main', text: 'x' }],
      ['empty thread name', { thread: '', text: 'x' }],
      ['thread name of 65 characters', { thread: 'a'.repeat(65), text: 'x' }],
      ['text null', { text: null }],
      ['unknown field', { text: 'x', author: 'me' }],
      ['U+0000 in text', { text: 'a\u0000b' }],
    ] as const) {
      const res = await post(via, session.id, fields);
      t.equal(res.status, 400, name);
      t.equal(res.body.error, 'invalid_request_body', name);
    }
    t.equal((await post(via, session.id, { thread: 'a'.repeat(64), text: 'x' })).status, 200, '64 characters');
    t.equal((await post(via, session.id, { thread: 'q', text: 'x' })).status, 200, 'one character');
    const noSession = await post(via, 'no-such-session', { text: 'x' });
    t.equal(noSession.status, 404);
  });

  t.test(`${via}: access and deleting sessions`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const byReader = await post(via, session.id, { text: 'x' }, asReader);
    t.equal(byReader.status, 403);
    t.equal(byReader.body.error, 'forbidden');
    const byStranger = await post(via, session.id, { text: 'x' }, asStranger);
    t.equal(byStranger.status, 404);
    const listStranger = await asStranger.run(via, revision.id, 'list_session_thread_items', {
      session_id: session.id,
    });
    t.equal(listStranger.status, 404);
    await markDeleting(app, session.id);
    const late = await post(via, session.id, { text: 'x' });
    t.equal(late.status, 409);
    t.equal(late.body.error, 'conflict');
  });
}

t.test('list_session_thread_items: cursors are bound to the session and the thread filter', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const other = await createSession(app, alice, revision.id);
  for (let i = 0; i < 4; i++) await post('rest', session.id, { thread: i % 2 === 0 ? 'even' : 'odd', text: `t-${i}` });
  await post('rest', other.id, { text: 'other' });
  const first = await as.run('rest', revision.id, 'list_session_thread_items', {
    session_id: session.id,
    thread: 'even',
    limit: 1,
  });
  t.same(
    first.body.thread_items.map((i: any) => i.text),
    ['t-0'],
  );
  const cursor: string = first.body.cursor;
  for (const via of VIAS) {
    const next = await as.run(via, revision.id, 'list_session_thread_items', {
      session_id: session.id,
      thread: 'even',
      cursor,
      limit: 1,
    });
    t.same(
      next.body.thread_items.map((i: any) => i.text),
      ['t-2'],
      `${via}: resumes`,
    );
    t.equal(next.body.cursor, null, `${via}: the last row of the filter ends the listing`);
    for (const [name, params] of [
      ['another thread', { session_id: session.id, thread: 'odd', cursor }],
      ['no thread filter', { session_id: session.id, cursor }],
      ['another session', { session_id: other.id, thread: 'even', cursor }],
      ['a modified cursor', { session_id: session.id, thread: 'even', cursor: `${cursor}x` }],
      ['a truncated cursor', { session_id: session.id, thread: 'even', cursor: cursor.slice(0, -1) }],
      ['an objects cursor', { session_id: session.id, cursor: 'e30.AAAA' }],
    ] as const) {
      const res = await as.run(via, revision.id, 'list_session_thread_items', params);
      t.equal(res.status, 400, `${via}: ${name}`);
      t.equal(res.body.error, 'invalid_cursor', `${via}: ${name}`);
    }
    const nullCursor = await as.run(via, revision.id, 'list_session_thread_items', {
      session_id: session.id,
      cursor: null,
    });
    t.equal(nullCursor.body.error, 'invalid_request_body');
    for (const limit of [0, 201, 2.5]) {
      const res = await as.run(via, revision.id, 'list_session_thread_items', { session_id: session.id, limit });
      t.equal(res.body.error, 'invalid_limit', `${via}: limit ${limit}`);
    }
    const badThread = await as.run(via, revision.id, 'list_session_thread_items', {
      session_id: session.id,
      thread: 'Bad Thread',
    });
    t.equal(badThread.body.error, 'invalid_request_body');
  }
});

t.test('list_session_thread_items: pagination to exhaustion with concurrent posts', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const before: string[] = [];
  for (let i = 0; i < 5; i++) {
    before.push(`start-${i}`);
    await post('rest', session.id, { text: `start-${i}`, thread: 'busy' });
  }
  const done: string[] = [];
  let posting = true;
  const posters = [0, 1, 2, 3].map(async (p) => {
    for (let i = 0; posting && i < 40; i++) {
      const text = `p${p}-${i}`;
      // Half go to another thread, which the filtered walk must not see.
      const thread = i % 2 === 0 ? 'busy' : 'quiet';
      const res = await post('rest', session.id, { text, thread });
      if (res.status !== 200) throw new Error(`post failed: ${JSON.stringify(res.body)}`);
      if (thread === 'busy') done.push(text);
    }
  });
  // The walk starts once the posters are under way, so the check below covers posts made during it.
  await until(() => done.length >= 2);
  const seen: string[] = [];
  let cursor: string | null = null;
  let doneBeforeLastPage: string[];
  let pages = 0;
  do {
    doneBeforeLastPage = [...done];
    const params: Record<string, unknown> = { session_id: session.id, thread: 'busy', limit: 2 };
    if (cursor !== null) params.cursor = cursor;
    const page = await as.run(pages % 2 === 0 ? 'rest' : 'rpc', revision.id, 'list_session_thread_items', params);
    t.equal(page.status, 200);
    seen.push(...page.body.thread_items.map((i: any) => i.text));
    t.ok(page.body.thread_items.every((i: any) => i.thread === 'busy'));
    cursor = page.body.cursor;
    pages += 1;
  } while (cursor !== null && pages < 500);
  posting = false;
  await Promise.all(posters);
  t.equal(new Set(seen).size, seen.length, 'no item twice');
  t.same(
    [...before, ...doneBeforeLastPage].filter((text) => !seen.includes(text)),
    [],
    'every item posted before the last page was asked for',
  );

  const all = await walk(session.id, {}, 7);
  t.equal(new Set(all).size, all.length);
  t.ok(
    before.every((text) => all.includes(text)),
    'the unfiltered walk holds every thread',
  );
});

t.test('list_session_thread_items: a post that commits late is not skipped', async (t) => {
  const session = await createSession(app, alice, revision.id);
  for (const text of ['s-0', 's-1', 's-2']) await post('rest', session.id, { text });
  const limits = await threadItemLimits(app.ctx.db, blob.id);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let drawn!: () => void;
  const slowDrawn = new Promise<void>((resolve) => {
    drawn = resolve;
  });
  // As a runner's thread.post holding its transaction after drawing its position.
  const slow = app.ctx.db.transaction(async (tx) => {
    await postThreadItem(tx, { sessionId: session.id, text: 'slow' }, limits);
    drawn();
    await gate;
  });
  await slowDrawn;
  const fast = ['fast-1', 'fast-2'].map((text) => tracked(post('rest', session.id, { text })));
  await until(async () => fast.every((p) => p.settled()) || (await advisoryWaiters(app)) >= 2);
  const done = ['s-0', 's-1', 's-2', ...['fast-1', 'fast-2'].filter((_, i) => fast[i]!.settled())];
  const first = await as.run('rest', revision.id, 'list_session_thread_items', { session_id: session.id, limit: 4 });
  const seen: string[] = first.body.thread_items.map((i: any) => i.text);
  release();
  await slow;
  let cursor: string | null = first.body.cursor;
  if (cursor !== null) done.push('slow');
  while (cursor !== null) {
    const page = await as.run('rest', revision.id, 'list_session_thread_items', {
      session_id: session.id,
      cursor,
      limit: 4,
    });
    seen.push(...page.body.thread_items.map((i: any) => i.text));
    cursor = page.body.cursor;
  }
  await Promise.all(fast.map((p) => p.promise));
  t.same(
    done.filter((text) => !seen.includes(text)),
    [],
    'every post committed before the walk went on is listed',
  );
  const all = await walk(session.id, {}, 50);
  t.same(all.slice(0, 4), ['s-0', 's-1', 's-2', 'slow']);
  t.same(all.slice(4).sort(), ['fast-1', 'fast-2']);
});

t.test('a post from a run names its execution, not an author', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const limits = await threadItemLimits(app.ctx.db, blob.id);
  const row = await app.ctx.db.transaction((tx) =>
    postThreadItem(tx, { sessionId: session.id, thread: 'log', text: 'from a node', node: 'report' }, limits),
  );
  t.equal(row.author_id, null);
  const events = await sessionEvents(app, session.id, 'thread.item_posted');
  t.equal(events.length, 1);
  // Refusals on this path are the same ServiceErrors as on the API.
  await t.rejects(
    app.ctx.db.transaction((tx) =>
      postThreadItem(
        tx,
        { sessionId: session.id, text: 'x', files: Array.from({ length: 11 }, (_, i) => `f-${i}-x`) },
        limits,
      ),
    ),
    { code: 'too_many_files', extras: { limit: { id: 'workflow.thread_item_files', value: 10 } } },
  );
});
