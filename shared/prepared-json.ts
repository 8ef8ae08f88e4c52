/**
 * A JSON value already serialized to UTF-8 and checked (control-plane/bodies/): what a large
 * request body's value becomes off the event loop, so the thread that stores it never holds the
 * parsed value nor runs `JSON.stringify` over it. `size` is its byte length, as
 * `Buffer.byteLength(JSON.stringify(value))` of the parsed value would be.
 */
export class PreparedJson {
  readonly json: Uint8Array;
  readonly size: number;

  constructor(json: Uint8Array) {
    this.json = json;
    this.size = json.byteLength;
  }
}
