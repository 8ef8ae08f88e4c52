import { Readable } from 'node:stream';

/** The success envelope: `status` beside the endpoint's own fields (docs/api.md, "Conventions"). */
export function ok<T extends Record<string, unknown>>(fields: T): { status: 'success' } & T {
  return { status: 'success', ...fields };
}

/** Bytes of an answer sent per event-loop turn, at most (PiecedAnswer). */
const ANSWER_PIECE_BYTES = 256 * 1024;

/**
 * An answer of megabytes given as pieces (views, not joined) and sent `ANSWER_PIECE_BYTES` per
 * event-loop turn: joined and written at once, its copy and the socket's write (on loopback the
 * kernel carries the bytes to the client within it) held the event loop for a time proportional
 * to its size. The route sets `content-length` to `byteLength`.
 */
export class PiecedAnswer extends Readable {
  readonly byteLength: number;
  readonly #pieces: Uint8Array[];
  #piece = 0;
  #offset = 0;

  constructor(pieces: Uint8Array[]) {
    super();
    this.#pieces = pieces;
    this.byteLength = pieces.reduce((sum, piece) => sum + piece.byteLength, 0);
  }

  override _read(): void {
    // A turn of its own for each piece: a socket that takes every write at once would otherwise
    // pull the next piece in the same turn (its writes complete synchronously).
    setImmediate(() => {
      const piece = this.#pieces[this.#piece];
      if (piece === undefined) {
        this.push(null);
        return;
      }
      const end = Math.min(piece.byteLength, this.#offset + ANSWER_PIECE_BYTES);
      const chunk = piece.subarray(this.#offset, end);
      this.#offset = end;
      if (end === piece.byteLength) {
        this.#piece++;
        this.#offset = 0;
      }
      this.push(chunk);
    });
  }

  /** The whole answer as text (for the answer checks of tests, control-plane/openapi/response-check.ts). */
  text(): string {
    return Buffer.concat(this.#pieces).toString('utf8');
  }
}
