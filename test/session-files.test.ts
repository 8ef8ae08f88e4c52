import t from 'tap';
import { buildTestApp, setOverride } from './helpers/app.ts';
import { createSession, markDeleting, sessionEvents, VIAS, sessionContentFixture } from './helpers/session-contents.ts';
import { createBlob } from './helpers/resources.ts';

const { app } = await buildTestApp(t);
const { alice, stranger, org, revision, as, asReader, asStranger } = await sessionContentFixture(t, app);

const FILE_BYTES = 4_194_304;
const fileCeiling = { id: 'workflow.session_file_bytes', value: FILE_BYTES };
const everyByte = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

/** A raw upload through the binary route, with full control of the headers. */
function rawUpload(headers: Record<string, string>, payload: Buffer | string, revisionId: string = revision.id) {
  return app.inject({ method: 'POST', url: `/v1/revisions/${revisionId}/upload_session_file`, headers, payload });
}

for (const up of VIAS) {
  for (const down of VIAS) {
    t.test(`every byte value: upload over ${up}, download over ${down}`, async (t) => {
      const session = await createSession(app, alice, revision.id);
      const uploaded = await as.upload(
        up,
        revision.id,
        { session_id: session.id, alias: 'bytes.bin', content_type: 'image/png' },
        everyByte,
      );
      t.equal(uploaded.status, 200);
      t.match(uploaded.body.object, {
        session_id: session.id,
        alias: 'bytes.bin',
        kind: 'file',
        content_type: 'image/png',
        size: 256,
      });
      t.same(Object.keys(uploaded.body.object).sort(), [
        'alias',
        'content_type',
        'created_at',
        'id',
        'kind',
        'session_id',
        'size',
        'updated_at',
      ]);

      const downloaded = await asReader.download(down, revision.id, { session_id: session.id, alias: 'bytes.bin' });
      t.equal(downloaded.status, 200);
      t.ok(downloaded.bytes!.equals(everyByte), 'the same 256 bytes come back');
      t.equal(downloaded.contentType, 'image/png');
      if (down === 'rest')
        t.same(downloaded.body, { status: 'success', size: 256, content_type: 'image/png' }, 'X-Response-Body');
      else
        t.same(downloaded.body, {
          status: 'success',
          content_base64: everyByte.toString('base64'),
          size: 256,
          content_type: 'image/png',
        });
    });
  }

  t.test(`${up}: session_file_bytes at the catalog value`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const exact = await as.upload(
      up,
      revision.id,
      { session_id: session.id, alias: 'exact' },
      Buffer.alloc(FILE_BYTES, 7),
    );
    t.equal(exact.status, 200, 'exactly the ceiling is accepted');
    t.equal(exact.body.object.size, FILE_BYTES);
    t.equal(exact.body.object.content_type, 'application/octet-stream', 'the default content type');
    const over = await as.upload(
      up,
      revision.id,
      { session_id: session.id, alias: 'over' },
      Buffer.alloc(FILE_BYTES + 1, 7),
    );
    t.equal(over.status, 400);
    t.equal(over.body.error, 'session_file_too_large');
    t.same(over.body.limit, fileCeiling);
    if (up === 'rpc') t.equal(over.rpcCode, -32001);
    const listed = await as.run(up, revision.id, 'list_session_objects', { session_id: session.id });
    t.same(
      listed.body.objects.map((o: any) => o.alias),
      ['exact'],
    );
    t.notOk('value' in listed.body.objects[0], 'a file is listed without its bytes');
    t.notOk('content' in listed.body.objects[0]);
  });

  t.test(`${up}: objects and files replace each other under one alias`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    const object = await as.run(up, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'shared',
      value: { a: 1 },
    });
    const file = await as.upload(
      up,
      revision.id,
      { session_id: session.id, alias: 'shared', content_type: 'text/plain; charset=utf-8' },
      Buffer.from('hello'),
    );
    t.equal(file.status, 200);
    t.equal(file.body.object.id, object.body.object.id, 'the alias keeps its id');
    t.equal(file.body.object.kind, 'file');
    t.equal(file.body.object.content_type, 'text/plain; charset=utf-8');
    const got = await as.download(up, revision.id, { session_id: session.id, alias: 'shared' });
    t.equal(got.bytes!.toString(), 'hello');
    const back = await as.run(up, revision.id, 'upload_session_object', {
      session_id: session.id,
      alias: 'shared',
      value: [1],
    });
    t.equal(back.body.object.kind, 'object');
    t.same(back.body.object.value, [1]);
    const gone = await as.download(up, revision.id, { session_id: session.id, alias: 'shared' });
    t.equal(gone.status, 404, 'an alias holding an object has no file to download');
    t.equal(gone.body.error, 'not_found');
    const events = await sessionEvents(app, session.id, 'file.written');
    t.same(
      events.map((e) => e.attributes),
      [
        {
          object_id: object.body.object.id,
          alias: 'shared',
          kind: 'file',
          size: 5,
          created: false,
          content_type: 'text/plain; charset=utf-8',
        },
      ],
    );
  });

  t.test(`${up}: params`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    for (const [name, target] of [
      ['bad alias', { session_id: session.id, alias: 'A' }],
      ['unknown field', { session_id: session.id, alias: 'abc', size: 1 }],
      [
        'content type with a line break',
        { session_id: session.id, alias: 'abc', content_type: 'text/html\r\nx-injected: 1' },
      ],
      ['content type that is no media type', { session_id: session.id, alias: 'abc', content_type: 'png' }],
      ['missing session', { alias: 'abc' }],
    ] as const) {
      const res = await as.upload(up, revision.id, target, Buffer.from('x'));
      t.equal(res.status, 400, name);
      t.equal(res.body.error, 'invalid_request_body', name);
    }
    const missing = await as.download(up, revision.id, { session_id: session.id, alias: 'nothing' });
    t.equal(missing.status, 404);
    t.equal(missing.body.error, 'not_found');
    const noSession = await as.upload(up, revision.id, { session_id: 'nope', alias: 'abc' }, Buffer.from('x'));
    t.equal(noSession.status, 404);
  });

  t.test(`${up}: access`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    await as.upload(up, revision.id, { session_id: session.id, alias: 'doc' }, Buffer.from('x'));
    const byReader = await asReader.upload(up, revision.id, { session_id: session.id, alias: 'doc' }, Buffer.from('y'));
    t.equal(byReader.status, 403);
    t.equal(byReader.body.error, 'forbidden');
    const upStranger = await asStranger.upload(
      up,
      revision.id,
      { session_id: session.id, alias: 'doc' },
      Buffer.from('y'),
    );
    t.equal(upStranger.status, 404);
    t.equal(upStranger.body.error, 'not_found');
    const downStranger = await asStranger.download(up, revision.id, { session_id: session.id, alias: 'doc' });
    t.equal(downStranger.status, 404);
    t.equal(downStranger.body.error, 'not_found');
    const { revision: graph } = await createBlob(app, alice, org.id, { type: 'svc.graph.graphdb' });
    const wrongType = await as.upload(up, graph.id, { session_id: session.id, alias: 'doc' }, Buffer.from('y'));
    t.equal(wrongType.status, 404);
    t.equal(wrongType.body.error, 'unknown_command');
    const wrongTypeDown = await as.download(up, graph.id, { session_id: session.id, alias: 'doc' });
    t.equal(wrongTypeDown.body.error, 'unknown_command');
  });

  t.test(`${up}: a session being deleted refuses uploads with 409`, async (t) => {
    const session = await createSession(app, alice, revision.id);
    await markDeleting(app, session.id);
    const res = await as.upload(up, revision.id, { session_id: session.id, alias: 'late' }, Buffer.from('x'));
    t.equal(res.status, 409);
    t.equal(res.body.error, 'conflict');
  });

  t.test(`${up}: files count against session_objects_per_session`, async (t) => {
    const { blob: quotaBlob, revision: quotaRevision } = await createBlob(app, alice, org.id);
    await setOverride(app, 'workflow.session_objects_per_session', 'blob', quotaBlob.id, 2);
    const session = await createSession(app, alice, quotaRevision.id);
    t.equal(
      (await as.upload(up, quotaRevision.id, { session_id: session.id, alias: 'f-1' }, Buffer.from('1'))).status,
      200,
    );
    t.equal(
      (await as.run(up, quotaRevision.id, 'upload_session_object', { session_id: session.id, alias: 'o-1', value: 1 }))
        .status,
      200,
    );
    const refused = await as.upload(up, quotaRevision.id, { session_id: session.id, alias: 'f-2' }, Buffer.from('2'));
    t.equal(refused.status, 400);
    t.equal(refused.body.error, 'limit_exceeded');
    t.same(refused.body.limit, { id: 'workflow.session_objects_per_session', value: 2, held: 2 });
    const replaced = await as.upload(
      up,
      quotaRevision.id,
      { session_id: session.id, alias: 'f-1' },
      Buffer.from('again'),
    );
    t.equal(replaced.status, 200, 'replacing is not a new slot');
  });
}

t.test('binary route: the body and the X-Request-Body header', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const target = JSON.stringify({ session_id: session.id, alias: 'raw' });

  const noHeader = await rawUpload({ ...alice.headers, 'content-type': 'application/octet-stream' }, 'x');
  t.equal(noHeader.statusCode, 400);
  t.equal(noHeader.json().error, 'invalid_request_body');
  const notJson = await rawUpload(
    { ...alice.headers, 'content-type': 'application/octet-stream', 'x-request-body': '{session_id' },
    'x',
  );
  t.equal(notJson.statusCode, 400);
  t.equal(notJson.json().error, 'invalid_request_body');
  const notObject = await rawUpload(
    { ...alice.headers, 'content-type': 'application/octet-stream', 'x-request-body': '[]' },
    'x',
  );
  t.equal(notObject.json().error, 'invalid_request_body');

  // Any Content-Type, or none, is taken as the file's bytes: a body that is not JSON under
  // application/json is stored as sent.
  const asJson = await rawUpload(
    { ...alice.headers, 'content-type': 'application/json', 'x-request-body': target },
    '{not json',
  );
  t.equal(asJson.statusCode, 200);
  t.equal(asJson.json().object.size, 9);
  const got = await as.download('rest', revision.id, { session_id: session.id, alias: 'raw' });
  t.equal(got.bytes!.toString(), '{not json');
  t.equal(got.contentType, 'application/octet-stream', 'the stored type comes from X-Request-Body only');

  const empty = await rawUpload(
    { ...alice.headers, 'x-request-body': JSON.stringify({ session_id: session.id, alias: 'empty' }) },
    '',
  );
  t.equal(empty.statusCode, 200);
  t.equal(empty.json().object.size, 0);
  const emptyBack = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${revision.id}/download_session_file`,
    headers: alice.headers,
    payload: { session_id: session.id, alias: 'empty' },
  });
  t.equal(emptyBack.statusCode, 200);
  t.equal(emptyBack.rawPayload.length, 0);
  t.same(JSON.parse(emptyBack.headers['x-response-body'] as string), {
    status: 'success',
    size: 0,
    content_type: 'application/octet-stream',
  });
  t.equal(emptyBack.headers['x-content-type-options'], 'nosniff');

  const anonymous = await rawUpload({ 'content-type': 'application/octet-stream', 'x-request-body': target }, 'x');
  t.equal(anonymous.statusCode, 401);
  t.equal(anonymous.json().error, 'unauthorized');
});

t.test('binary route: a body past the ceiling is the ceiling refusing, however large', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const headers = {
    ...alice.headers,
    'content-type': 'application/octet-stream',
    'x-request-body': JSON.stringify({ session_id: session.id, alias: 'huge' }),
  };
  for (const size of [FILE_BYTES + 1, FILE_BYTES + 2, 9 * 1024 * 1024]) {
    const res = await rawUpload(headers, Buffer.alloc(size));
    t.equal(res.statusCode, 400, `${size} bytes`);
    t.same(
      res.json(),
      { status: 'failure', error: 'session_file_too_large', message: res.json().message, limit: fileCeiling },
      `${size} bytes`,
    );
  }
  // Access is checked before the body is read: a stranger's oversized upload is 404, not 400.
  const strangerHeaders = { ...headers, ...stranger.headers };
  const byStranger = await rawUpload(strangerHeaders, Buffer.alloc(FILE_BYTES + 2));
  t.equal(byStranger.statusCode, 404);
});

t.test('download failures answer the JSON envelope', async (t) => {
  const session = await createSession(app, alice, revision.id);
  const res = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${revision.id}/download_session_file`,
    headers: alice.headers,
    payload: { session_id: session.id, alias: 'none' },
  });
  t.equal(res.statusCode, 404);
  t.match(res.headers['content-type'], /^application\/json/);
  t.equal(res.headers['x-response-body'], undefined);
  t.equal(res.json().error, 'not_found');
  const unknownField = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${revision.id}/download_session_file`,
    headers: alice.headers,
    payload: { session_id: session.id, alias: 'none', extra: 1 },
  });
  t.equal(unknownField.statusCode, 400);
  t.equal(unknownField.json().error, 'invalid_request_body');
  const base64 = await as.run('rpc', revision.id, 'upload_session_file', {
    session_id: session.id,
    alias: 'b64',
    content_base64: 'not base64!',
  });
  t.equal(base64.status, 400);
  t.equal(base64.body.error, 'invalid_request_body');
  t.equal(base64.rpcCode, -32602);
});
