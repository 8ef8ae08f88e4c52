/**
 * The command route's body reader (control-plane/bodies/body-bytes.ts) copies each chunk into the
 * body's buffer as it arrives; what it answers and refuses must be what fastify's
 * `parseAs: 'buffer'` answers and refuses.
 */
import t from 'tap';
import { Readable } from 'node:stream';
import { readBodyBytes } from '../control-plane/bodies/body-bytes.ts';

/** A payload of `chunks`, each delivered in a turn of its own. */
function payload(chunks: Array<Buffer | string>, error?: Error): Readable {
  return new Readable({
    read() {
      setImmediate(() => {
        if (chunks.length > 0) this.push(chunks.shift());
        else if (error) this.destroy(error);
        else this.push(null);
      });
    },
  });
}

const parts = [Buffer.from('{"records":['), Buffer.from('"é'), Buffer.from('😀"]}')];
const whole = Buffer.concat(parts);

t.test('a body with Content-Length lands in a buffer of its own, whole', async (t) => {
  let pulled = 0;
  const stream = payload([...parts]);
  stream.on('data', () => pulled++);
  const body = await readBodyBytes(stream, String(whole.length), 1024);
  t.ok(body.equals(whole));
  t.equal(pulled, parts.length, 'read chunk by chunk');
  t.equal(body.buffer.byteLength, whole.length, 'its own array buffer (a body thread takes it without a copy)');
});

t.test('a chunked body (no Content-Length) is joined', async (t) => {
  t.ok((await readBodyBytes(payload([...parts]), undefined, 1024)).equals(whole));
  t.ok((await readBodyBytes(payload(['text ', 'chunks']), undefined, 1024)).equals(Buffer.from('text chunks')));
});

t.test("refusals are fastify's", async (t) => {
  await t.rejects(
    readBodyBytes(payload([...parts]), '2000', 1024),
    { code: 'FST_ERR_CTP_BODY_TOO_LARGE' },
    'announced',
  );
  await t.rejects(
    readBodyBytes(payload([Buffer.alloc(600), Buffer.alloc(600)]), undefined, 1024),
    { code: 'FST_ERR_CTP_BODY_TOO_LARGE' },
    'chunked past the limit',
  );
  await t.rejects(
    readBodyBytes(payload([Buffer.alloc(600), Buffer.alloc(600)]), '1000', 1024),
    { code: 'FST_ERR_CTP_BODY_TOO_LARGE' },
    'more than announced, past the limit',
  );
  await t.rejects(
    readBodyBytes(payload([...parts]), String(whole.length + 1), 1024),
    { code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' },
    'fewer bytes than announced',
  );
  await t.rejects(
    readBodyBytes(payload([...parts]), String(whole.length - 1), 1024),
    { code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' },
    'more bytes than announced',
  );
  await t.rejects(
    readBodyBytes(payload([...parts], new Error('aborted')), String(whole.length + 10), 1024),
    { message: 'aborted', statusCode: 400 },
    'a stream error is a 400',
  );
});
