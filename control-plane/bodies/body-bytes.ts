/**
 * A request body's bytes as fastify's `parseAs: 'buffer'` reads them, with the same refusals
 * (`FST_ERR_CTP_BODY_TOO_LARGE` past the limit, before reading when `Content-Length` announces
 * it; `FST_ERR_CTP_INVALID_CONTENT_LENGTH` when the bytes differ from it; a stream error as 400),
 * but copied into their buffer as each chunk arrives. fastify collects the chunks and copies them
 * all into one buffer at the end: for a body of megabytes, one stretch of the event loop (and of
 * fresh pages to fault in) proportional to its size, during which no other request ran.
 *
 * A body with `Content-Length` goes into a buffer of that size, its own array buffer, which a body
 * thread takes without a copy (control-plane/bodies/body-threads.ts). A chunked body (no length)
 * is still collected and joined at the end, within the same limit.
 */
import { errorCodes } from 'fastify';
import type { Readable } from 'node:stream';

/** The payload stream fastify hands a parser; a decoding preParsing stream may count the bytes it read. */
type Payload = Readable & { receivedEncodedLength?: number };

/** Reads `payload` whole; `contentLength` is the request's header, `limit` the route's body limit. */
export function readBodyBytes(payload: Payload, contentLength: string | undefined, limit: number): Promise<Buffer> {
  const announced = Number(contentLength);
  if (announced > limit) return Promise.reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
  const into = Number.isSafeInteger(announced) && announced >= 0 ? Buffer.allocUnsafeSlow(announced) : null;
  const chunks: Buffer[] = [];
  let received = 0;
  return new Promise((resolve, reject) => {
    const stop = () => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onEnd);
    };
    function onData(chunk: Buffer | string): void {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      const at = received;
      received += bytes.length;
      if (received > limit || (payload.receivedEncodedLength ?? 0) > limit) {
        stop();
        reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
        return;
      }
      if (into === null) chunks.push(bytes);
      // Bytes past the announced length are refused at the end, as fastify refuses them.
      else if (received <= into.length) into.set(bytes, at);
    }
    function onEnd(error?: Error & { statusCode?: number }): void {
      stop();
      if (error != null) {
        if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
        reject(error);
        return;
      }
      if (!Number.isNaN(announced) && (payload.receivedEncodedLength || received) !== announced) {
        reject(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
        return;
      }
      resolve(into ?? Buffer.concat(chunks, received));
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
    payload.resume();
  });
}
