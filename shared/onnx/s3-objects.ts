import { DeleteObjectCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import type { S3Settings } from './s3-settings.ts';

/** Model bytes in an S3-compatible bucket: streamed up in parts, streamed down, deleted. */
export class S3Objects {
  readonly settings: S3Settings;
  readonly #client: S3Client;

  constructor(settings: S3Settings) {
    this.settings = settings;
    this.#client = new S3Client({
      region: settings.region,
      forcePathStyle: settings.forcePathStyle,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      ...(settings.accessKeyId && settings.secretAccessKey
        ? { credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } }
        : {}),
    });
  }

  /** A new key for a model of `revisionId` (a new one per upload: an old one may still be read). */
  keyFor(revisionId: string, sha256Prefix: string): string {
    return `${this.settings.prefix}${revisionId}/${Date.now().toString(36)}-${sha256Prefix}`;
  }

  /**
   * Streams `body` to `key` in multipart parts of 8 MiB, one part in flight at a time, so at most
   * a part or two are held in memory (lib-storage's Upload). `signal` aborts it.
   */
  async put(key: string, body: Readable, signal: AbortSignal): Promise<void> {
    const upload = new Upload({
      client: this.#client,
      params: { Bucket: this.settings.bucket, Key: key, Body: body, ContentType: 'application/octet-stream' },
      partSize: 8 * 1024 * 1024,
      queueSize: 1,
      leavePartsOnError: false,
    });
    const abort = () => void upload.abort().catch(() => {});
    signal.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }

  async get(key: string): Promise<Readable> {
    const result = await this.#client.send(new GetObjectCommand({ Bucket: this.settings.bucket, Key: key }));
    return result.Body as Readable;
  }

  async delete(key: string): Promise<void> {
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: key }));
  }

  close(): void {
    this.#client.destroy();
  }
}
