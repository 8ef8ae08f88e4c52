// pg-large-object ships no types; the part the model routes use (control-plane/routes/models.ts).
declare module 'pg-large-object/lib/LargeObjectManager.js' {
  import type { Readable, Writable } from 'node:stream';
  export default class LargeObjectManager {
    constructor(options: { pg: { query: (...args: never[]) => unknown } });
    static WRITE: number;
    static READ: number;
    createAndWritableStreamAsync(bufferSize?: number): Promise<[number, Writable]>;
    openAndReadableStreamAsync(oid: number, bufferSize?: number): Promise<[number, Readable]>;
    unlinkAsync(oid: number): Promise<void>;
  }
}
