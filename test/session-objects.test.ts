import t from 'tap';
import { buildTestApp, setOverride } from './helpers/app.ts';
import {
  advisoryWaiters,
  createSession,
  markDeleting,
  sessionEvents,
  tracked,
  until,
  VIAS,
  sessionContentFixture,
} from './helpers/session-contents.ts';
import { createBlob } from './helpers/resources.ts';
import { contentWriteLimits, writeSessionObject } from '../shared/session/object-writes.ts';

const { app } = await buildTestApp(t);
const { alice, org, blob, revision, as, asReader, asStranger } = await sessionContentFixture(t, app);

const OBJECT_BYTES = 5_242_880;
const objectCeiling = { id: 'workflow.session_object_bytes', value: OBJECT_BYTES };

/** A string whose JSON serialization (quotes included) is exactly `bytes` UTF-8 bytes. */
function stringOfSize(bytes: number): string {
  return 'a'.repeat(bytes - 2);
}

for (const via of VIAS) {
  t.test(`${via}: upload, replace and list`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const first = await as.run(via, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'config',
      value: { depth: 2, tags: ['a', 'b'] },
    });
    t.equal(first.status, 200);
    const object = first.body.object;
    t.match(object, {
      session_id: session.id,
      alias: 'config',
      kind: 'object',
      value: { depth: 2, tags: ['a', 'b'] },
      size: Buffer.byteLength('{"depth":2,"tags":["a","b"]}'),
    });
    t.same(Object.keys(object).sort(), [
      'alias',
      'created_at',
      'id',
      'kind',
      'session_id',
      'size',
      'updated_at',
      'value',
    ]);

    // By alias as well as by id; `null` is a value like any other.
    const replaced = await as.run(via, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'config',
      value: null,
    });
    t.equal(replaced.status, 200);
    t.equal(replaced.body.object.id, object.id, 'replacing keeps the id');
    t.equal(replaced.body.object.created_at, object.created_at);
    t.equal(replaced.body.object.value, null);
    t.equal(replaced.body.object.size, 4);

    const listed = await asReader.run(via, revision.id, 'list_session_objects', { session_id: session.id });
    t.equal(listed.status, 200);
    t.same(listed.body.objects, [replaced.body.object]);
    t.equal(listed.body.cursor, null);

    const events = await sessionEvents(app, session.id, 'object.written');
    t.same(
      events.map((e) => e.attributes),
      [
        { object_id: object.id, alias: 'config', kind: 'object', size: object.size, created: true },
        { object_id: object.id, alias: 'config', kind: 'object', size: 4, created: false },
      ],
    );
  });

  t.test(`${via}: session_object_bytes is measured serialized, at the catalog value`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const exact = await as.run(via, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'exact',
      value: stringOfSize(OBJECT_BYTES),
    });
    t.equal(exact.status, 200, 'a value of exactly the ceiling is accepted');
    t.equal(exact.body.object.size, OBJECT_BYTES);

    const over = await as.run(via, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'over',
      value: stringOfSize(OBJECT_BYTES + 1),
    });
    t.equal(over.status, 400, '5 MiB + 1 is the ceiling refusing, not 413');
    t.equal(over.body.error, 'session_object_too_large');
    t.same(over.body.limit, objectCeiling);
    if (via === 'rpc') t.equal(over.rpcCode, -32001);

    // UTF-8 bytes, not characters: 2,621,440 characters but 5,242,881 bytes serialized.
    const wide = await as.run(via, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'wide',
      value: `${'é'.repeat(2_621_439)}a`,
    });
    t.equal(wide.body.error, 'session_object_too_large');
    t.same(wide.body.limit, objectCeiling);

    const listed = await as.run(via, revision.id, 'list_session_objects', { session_id: session.id });
    t.same(
      listed.body.objects.map((o: any) => o.alias),
      ['exact'],
      'refused writes store nothing',
    );
  });

  t.test(`${via}: session_objects_per_session counts only new aliases`, async (t) => {
    const { blob: quotaBlob, revision: quotaRevision } = await createBlob(app, alice, org.id);
    await setOverride(app, 'workflow.session_objects_per_session', 'blob', quotaBlob.id, 3);
    const session = await createSession(app, alice, quotaRevision.id);
    for (const alias of ['one', 'two', 'three']) {
      const res = await as.run(via, quotaRevision.id, 'upload_session_object', {
        session_id: session.id,
        alias,
        value: alias,
      });
      t.equal(res.status, 200, alias);
    }
    const refused = await as.run(via, quotaRevision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'four',
      value: 4,
    });
    t.equal(refused.status, 400);
    t.equal(refused.body.error, 'limit_exceeded');
    t.same(refused.body.limit, { id: 'workflow.session_objects_per_session', value: 3, held: 3 });

    const replaced = await as.run(via, quotaRevision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'two',
      value: 'again',
    });
    t.equal(replaced.status, 200, 'replacing an alias at the limit is not a new slot');

    // Files share the namespace and the quota.
    const file = await as.upload(via, quotaRevision.id, { session_id: session.id, alias: 'five' }, Buffer.from('x'));
    t.equal(file.body.error, 'limit_exceeded');
    t.same(file.body.limit, { id: 'workflow.session_objects_per_session', value: 3, held: 3 });
    const fileOverObject = await as.upload(
      via,
      quotaRevision.id,
      { session_id: session.id, alias: 'three' },
      Buffer.from('x'),
    );
    t.equal(fileOverObject.status, 200, 'a file may replace an object at the limit');

    // The value in force is read on every request.
    await setOverride(app, 'workflow.session_objects_per_session', 'blob', quotaBlob.id, 4);
    const roomy = await as.run(via, quotaRevision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'four',
      value: 4,
    });
    t.equal(roomy.status, 200);
    const full = await as.run(via, quotaRevision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'six',
      value: 6,
    });
    t.same(full.body.limit, { id: 'workflow.session_objects_per_session', value: 4, held: 4 });
  });

  t.test(`${via}: params`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const cases: Array<[string, Record<string, unknown>]> = [
      ['missing value', { session_id: session.id, alias: 'abc' }],
      ['unknown field', { session_id: session.id, alias: 'abc', value: 1, extra: true }],
      ['alias too short', { session_id: session.id, alias: 'ab', value: 1 }],
      ['alias with upper case', { session_id: session.id, alias: 'Abc', value: 1 }],
      ['UUID-shaped alias', { session_id: session.id, alias: '00000000-0000-4000-8000-000000000000', value: 1 }],
      ['reserved alias', { session_id: session.id, alias: 'me', value: 1 }],
      ['U+0000 in a string', { session_id: session.id, alias: 'abc', value: 'a\u0000b' }],
      ['a lone surrogate', { session_id: session.id, alias: 'abc', value: { k: '\ud800' } }],
    ];
    for (const [name, params] of cases) {
      const res = await as.run(via, revision.id, 'upload_session_object', params);
      t.equal(res.status, 400, name);
      t.equal(res.body.error, 'invalid_request_body', name);
      if (via === 'rpc') t.equal(res.rpcCode, -32602, name);
    }
    const noSession = await as.run(via, revision.id, 'upload_session_object', {
      session_id: 'no-such-session',
      alias: 'abc',
      value: 1,
    });
    t.equal(noSession.status, 404);
    t.equal(noSession.body.error, 'not_found');
  });

  t.test(`${via}: access`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const write = { session_id: session.id, alias: 'abc', value: 1 };
    const byReader = await asReader.run(via, revision.id, 'upload_session_object', write);
    t.equal(byReader.status, 403);
    t.equal(byReader.body.error, 'forbidden');
    for (const command of ['upload_session_object', 'list_session_objects']) {
      const byStranger = await asStranger.run(
        via,
        revision.id,
        command,
        command === 'list_session_objects' ? { session_id: session.id } : write,
      );
      t.equal(byStranger.status, 404, command);
      t.equal(byStranger.body.error, 'not_found', command);
    }
    // A session of another revision does not exist here.
    const { revision: other } = await createBlob(app, alice, org.id);
    const elsewhere = await as.run(via, other.id, 'list_session_objects', { session_id: session.id });
    t.equal(elsewhere.status, 404);
  });

  t.test(`${via}: a session being deleted refuses writes with 409`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    await as.run(via, revision.id, 'upload_session_object', { session_id: session.id, alias: 'kept', value: 1 });
    await markDeleting(app, session.id);
    const res = await as.run(via, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'late',
      value: 1,
    });
    t.equal(res.status, 409);
    t.equal(res.body.error, 'conflict');
    const replace = await as.run(via, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'kept',
      value: 2,
    });
    t.equal(replace.body.error, 'conflict');
  });
}

t.test('delete_session, then a write: refused (409 while deleting, 404 once removed)', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const deleted = await as.run('rest', revision.id, 'delete_session', { session_id: session.id });
  t.equal(deleted.status, 200);
  const res = await as.run('rest', revision.id, 'upload_session_object', {
    session_id: session.id,
    alias: 'late',
    value: 1,
  });
  t.ok([409, 404].includes(res.status), `refused with ${res.status}`);
  t.equal(res.body.error, res.status === 409 ? 'conflict' : 'not_found');
});

t.test('list_session_objects: cursors and limits', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const other = await createSession(app, alice, revision.id);
  for (let i = 0; i < 5; i++)
    await as.run('rest', revision.id, 'upload_session_object', { session_id: session.id, alias: `obj-${i}`, value: i });
  await as.run('rest', revision.id, 'upload_session_object', { session_id: other.id, alias: 'obj-x', value: 'x' });
  const first = await as.run('rest', revision.id, 'list_session_objects', { session_id: session.id, limit: 2 });
  t.same(
    first.body.objects.map((o: any) => o.alias),
    ['obj-0', 'obj-1'],
  );
  const cursor: string = first.body.cursor;
  t.type(cursor, 'string');

  for (const via of VIAS) {
    const resumed = await as.run(via, revision.id, 'list_session_objects', {
      session_id: session.alias ?? session.id,
      cursor,
      limit: 2,
    });
    t.same(
      resumed.body.objects.map((o: any) => o.alias),
      ['obj-2', 'obj-3'],
      `${via}: resumes where it stopped`,
    );

    const flipped = cursor.slice(0, 3) + (cursor[3] === 'A' ? 'B' : 'A') + cursor.slice(4);
    const tampered = await as.run(via, revision.id, 'list_session_objects', {
      session_id: session.id,
      cursor: flipped,
    });
    t.equal(tampered.status, 400, `${via}: tampered`);
    t.equal(tampered.body.error, 'invalid_cursor');
    const [payload] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify(0)).toString('base64url');
    t.not(payload, forged);
    const reSigned = await as.run(via, revision.id, 'list_session_objects', {
      session_id: session.id,
      cursor: `${forged}.${cursor.split('.')[1]}`,
    });
    t.equal(reSigned.body.error, 'invalid_cursor', `${via}: a new position under the old signature`);
    const otherSession = await as.run(via, revision.id, 'list_session_objects', { session_id: other.id, cursor });
    t.equal(otherSession.body.error, 'invalid_cursor', `${via}: another session's listing`);
    const threadCursor = await as.run(via, revision.id, 'list_session_thread_items', {
      session_id: session.id,
      cursor,
    });
    t.equal(threadCursor.body.error, 'invalid_cursor', `${via}: another listing`);

    const nullCursor = await as.run(via, revision.id, 'list_session_objects', { session_id: session.id, cursor: null });
    t.equal(nullCursor.status, 400);
    t.equal(nullCursor.body.error, 'invalid_request_body', `${via}: cursor null`);
    for (const limit of [0, 201, -1, 1.5, 'abc', null]) {
      const res = await as.run(via, revision.id, 'list_session_objects', { session_id: session.id, limit });
      t.equal(res.status, 400, `${via}: limit ${JSON.stringify(limit)}`);
      t.equal(res.body.error, 'invalid_limit', `${via}: limit ${JSON.stringify(limit)}`);
    }
    const max = await as.run(via, revision.id, 'list_session_objects', { session_id: session.id, limit: 200 });
    t.equal(max.body.objects.length, 5);
    t.equal(max.body.cursor, null, 'a page that holds the rest ends the listing');
  }
});

t.test('list_session_objects: pagination to exhaustion with concurrent inserts', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const before: string[] = [];
  for (let i = 0; i < 6; i++) {
    before.push(`start-${i}`);
    await as.run('rest', revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: `start-${i}`,
      value: i,
    });
  }
  // Four writers create aliases (and replace one already listed) while one reader walks the
  // listing two rows a page, so pages end among rows whose writes are still committing.
  const done: string[] = [];
  let writing = true;
  const writers = [0, 1, 2, 3].map(async (w) => {
    for (let i = 0; writing && i < 40; i++) {
      const alias = `w${w}-${i}`;
      const res = await as.run('rest', revision.id, 'upload_session_object', {
        session_id: session.id,
        alias,
        value: i,
      });
      if (res.status !== 200) throw new Error(`write failed: ${JSON.stringify(res.body)}`);
      done.push(alias);
      await as.run('rest', revision.id, 'upload_session_object', {
        session_id: session.id,
        alias: 'start-0',
        value: alias,
      });
    }
  });
  // The walk starts once the writers are under way, so the check below covers writes made during it.
  await until(() => done.length >= 2);
  const seen: string[] = [];
  let cursor: string | undefined;
  let doneBeforeLastPage: string[];
  let pages = 0;
  do {
    doneBeforeLastPage = [...done];
    const params: Record<string, unknown> = { session_id: session.id, limit: 2 };
    if (cursor !== undefined) params.cursor = cursor;
    const page = await as.run(pages % 2 === 0 ? 'rest' : 'rpc', revision.id, 'list_session_objects', params);
    t.equal(page.status, 200);
    seen.push(...page.body.objects.map((o: any) => o.alias));
    cursor = page.body.cursor ?? undefined;
    pages += 1;
  } while (cursor !== undefined && pages < 500);
  writing = false;
  await Promise.all(writers);
  t.ok(pages < 500, 'the walk ends');
  t.equal(new Set(seen).size, seen.length, 'no alias twice (start-0 was replaced during the walk)');
  const missing = [...before, ...doneBeforeLastPage].filter((alias) => !seen.includes(alias));
  t.same(missing, [], 'every alias written before the last page was asked for is listed');
});

t.test('list_session_objects: a write that commits late is not skipped', async (t) => {
  // A slow writer (as a runner's object.put holding its transaction) draws its position first;
  // two API writes come after it. Were they to commit first, a page ending at them would hand out
  // a cursor past the slow write's position, and the slow write would never be listed.
  const session = await createSession(app, alice, revision.id);
  for (const alias of ['s-0', 's-1', 's-2'])
    await as.run('rest', revision.id, 'upload_session_object', { session_id: session.id, alias, value: alias });
  const limits = await contentWriteLimits(app.ctx.db, blob.id);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let drawn!: () => void;
  const slowDrawn = new Promise<void>((resolve) => {
    drawn = resolve;
  });
  const slow = app.ctx.db.transaction(async (tx) => {
    await writeSessionObject(tx, { sessionId: session.id, alias: 'slow', value: 'slow' }, limits);
    drawn();
    await gate;
  });
  await slowDrawn;
  const fast = ['fast-1', 'fast-2'].map((alias) =>
    tracked(as.run('rest', revision.id, 'upload_session_object', { session_id: session.id, alias, value: alias })),
  );
  // Either both fast writes committed, or both wait for the slow one.
  await until(async () => fast.every((w) => w.settled()) || (await advisoryWaiters(app)) >= 2);

  const done = ['s-0', 's-1', 's-2', ...['fast-1', 'fast-2'].filter((_, i) => fast[i]!.settled())];
  const first = await as.run('rest', revision.id, 'list_session_objects', { session_id: session.id, limit: 4 });
  const seen: string[] = first.body.objects.map((o: any) => o.alias);
  release();
  await slow;
  let cursor: string | null = first.body.cursor;
  // The slow write has committed; if the walk goes on, it must list it.
  if (cursor !== null) done.push('slow');
  while (cursor !== null) {
    const page = await as.run('rest', revision.id, 'list_session_objects', {
      session_id: session.id,
      cursor,
      limit: 4,
    });
    seen.push(...page.body.objects.map((o: any) => o.alias));
    cursor = page.body.cursor;
  }
  await Promise.all(fast.map((w) => w.promise));
  t.same(
    done.filter((alias) => !seen.includes(alias)),
    [],
    'every write committed before the walk went on is listed',
  );
  t.equal(new Set(seen).size, seen.length);
  const all = await as.run('rest', revision.id, 'list_session_objects', { session_id: session.id });
  const order = all.body.objects.map((o: any) => o.alias);
  t.same(order.slice(0, 4), ['s-0', 's-1', 's-2', 'slow'], 'positions follow the order writes drew them');
  t.same(order.slice(4).sort(), ['fast-1', 'fast-2']);
});

t.test('list_session_objects: a page stops at its value budget', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const three = 3 * 1024 * 1024;
  for (const alias of ['big-1', 'big-2', 'big-3']) {
    const res = await as.run('rest', revision.id, 'upload_session_object', {
      session_id: session.id,
      alias,
      value: stringOfSize(three),
    });
    t.equal(res.status, 200);
  }
  await as.run('rest', revision.id, 'upload_session_object', { session_id: session.id, alias: 'small', value: 1 });
  const first = await as.run('rest', revision.id, 'list_session_objects', { session_id: session.id });
  t.same(
    first.body.objects.map((o: any) => o.alias),
    ['big-1', 'big-2'],
    '9 MiB would pass the 8 MiB budget',
  );
  t.equal(first.body.objects[1].value.length, three - 2);
  t.type(first.body.cursor, 'string', 'a short page is not the end');
  const second = await as.run('rpc', revision.id, 'list_session_objects', {
    session_id: session.id,
    cursor: first.body.cursor,
  });
  t.same(
    second.body.objects.map((o: any) => o.alias),
    ['big-3', 'small'],
  );
  t.equal(second.body.cursor, null);
});
