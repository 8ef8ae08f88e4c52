/**
 * What crosses between the event loop and the body threads (./body-threads.ts, ./body-thread.ts).
 * Byte arrays are transferred both ways, never copied.
 */

/** A request body to read: its bytes (transferred), its format and the command it is for. */
export interface BodyTask {
  bytes: Uint8Array;
  format: 'json' | 'json-lines';
  /** The command route's `:command`. */
  command: string;
  /**
   * Whether the thread may prepare the command's params (its checks done, what its SQL needs
   * encoded) rather than hand the checked text back; false for a request with an idempotency key,
   * whose fingerprint is computed from the parsed params.
   */
  prepare: boolean;
}

/** An `invalid_request_body` refusal's message, to be thrown where the event loop would have thrown it. */
export interface Refused {
  refusal: string;
}

/** The array literals of one INSERT of records (RECORDS_PER_STATEMENT at most), UTF-8. */
export interface RecordSlice {
  text: Uint8Array;
  labels: Uint8Array;
  meta: Uint8Array;
}

/** Checked records, encoded as the literals of their INSERTs. */
export interface RecordLiterals {
  count: number;
  slices: RecordSlice[];
}

/** The params besides their large field, as the command's schema parsed them (the field a placeholder). */
export type Shell = { params: Record<string, unknown> } | Refused;

export type BodyResult =
  /** The body itself is refused (UTF-8, JSON, depth, storable text): answered before any handler. */
  | { kind: 'refused'; refusal: string }
  /** The body passed its guard: its bytes back, to be parsed by the event loop. */
  | { kind: 'guarded'; bytes: Uint8Array }
  /** `upload_records` with a JSON body. */
  | { kind: 'records'; shell: Shell; records: RecordLiterals | Refused }
  /** `upload_records` with a JSON Lines body: the lines' refusal, or the records'. */
  | { kind: 'lines'; lines: Refused | { records: RecordLiterals | Refused } }
  /**
   * `upload_session_object`: the value serialized, and as its answer carries it once stored
   * (shared/prepared-json.ts RawJson); both null when the params have no value or are refused.
   */
  | { kind: 'object'; shell: Shell; json: Uint8Array | null; answer: Uint8Array | null };
