import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * An upload allocates a new buffer for every socket read (64 KiB), garbage a moment later; V8
 * frees such memory only at its next collection, which it schedules once about 64 MB more of it
 * is held. A stream of hundreds of megabytes would so keep up to that much garbage at a time.
 * Collecting the young generation every few megabytes of a stream keeps it to about that many
 * bytes, for ~2 ms a collection. The collector is reached through V8's own flags, once per process.
 */
let collect: ((options: { type: 'minor' | 'major'; execution: 'sync' }) => void) | null | undefined;

function collector(): typeof collect {
  if (collect === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as typeof collect;
    } catch {
      collect = null;
    }
  }
  return collect;
}

/** Frees the stream buffers already passed on (a young-generation collection). */
export function reclaimStreamBuffers(): void {
  collector()?.({ type: 'minor', execution: 'sync' });
}

/** Bytes of stream between two collections. */
export const RECLAIM_EVERY_BYTES = 4 * 1024 * 1024;

/**
 * A full collection, now: a body thread runs one after reading a large body, whose parse left tens
 * of megabytes of garbage that V8 would otherwise keep mapped until its heap grew further.
 */
export function collectAll(): void {
  collector()?.({ type: 'major', execution: 'sync' });
}
