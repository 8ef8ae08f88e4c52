/**
 * A JSON value already serialized to UTF-8 and checked (control-plane/bodies/): what a large
 * request body's value becomes off the event loop, so the thread that stores it never holds the
 * parsed value nor runs `JSON.stringify` over it. `size` is its byte length, as
 * `Buffer.byteLength(JSON.stringify(value))` of the parsed value would be.
 */
export class PreparedJson {
  readonly json: Uint8Array;
  readonly size: number;
  /** The value as an answer carries it once stored (RawJson), computed with `json`. */
  readonly answer: RawJson;

  constructor(json: Uint8Array, answer: Uint8Array) {
    this.json = json;
    this.size = json.byteLength;
    this.answer = new RawJson(answer);
  }
}

/**
 * A value of an answer as its JSON text (UTF-8), standing in for the parsed value: the stored
 * value as node-postgres would have parsed it from `jsonb` and the answer's serializer written it
 * (keys in `jsonb`'s order, then JavaScript's: integer-like keys first). A route that knows it
 * splices the text into its answer; anywhere else `toJSON` gives the parsed value, so the answer
 * is the same either way.
 */
export class RawJson {
  readonly bytes: Uint8Array;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }

  toJSON(): unknown {
    return JSON.parse(Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength).toString('utf8'));
  }
}
