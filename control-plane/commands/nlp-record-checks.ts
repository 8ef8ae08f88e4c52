/**
 * The checks of `upload_records` that need no database (docs/blob-types.md, "NLP datasets"): its
 * params, each record's bounds, JSON Lines bodies. Pure, so the body threads
 * (control-plane/bodies/body-thread.ts) run the very same checks on large uploads as the event
 * loop runs on small ones.
 */
import { z } from 'zod';
import { jsonProblem } from '../../shared/json-guard.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { NewNlpRecord } from '../sql/nlp-records.ts';

/** `upload_records`' params: the records are checked by checkedRecords, naming the record. */
export const uploadRecordsParams = z.strictObject({ records: z.unknown() });

/** Bounds of one upload and one record (documented in docs/blob-types.md). */
const NLP_BOUNDS = {
  recordsPerCall: 10_000,
  textBytes: 65_536,
  labels: 64,
  labelLength: 256,
  metaBytes: 16_384,
} as const;

/**
 * Checks every record and says which one is wrong: `records[i]: ...` (400
 * `invalid_request_body`), nothing written. Records are checked here rather than by a zod schema
 * so that every message names the record's index and the rule, however malformed the input.
 */
export function checkedRecords(input: unknown): NewNlpRecord[] {
  const bad = (index: number, message: string) =>
    new ServiceError('invalid_request_body', `Invalid params: records[${index}]: ${message}`);
  if (!Array.isArray(input))
    throw new ServiceError(
      'invalid_request_body',
      'Invalid params: records: an array of {text, labels?, meta?} objects',
    );
  if (input.length === 0)
    throw new ServiceError('invalid_request_body', 'Invalid params: records: at least one record');
  if (input.length > NLP_BOUNDS.recordsPerCall)
    throw new ServiceError(
      'invalid_request_body',
      `Invalid params: records: at most ${NLP_BOUNDS.recordsPerCall} per call, got ${input.length}`,
    );
  return input.map((record, index) => {
    if (typeof record !== 'object' || record === null || Array.isArray(record))
      throw bad(index, 'must be an object {text, labels?, meta?}');
    const { text, labels, meta, ...rest } = record as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw bad(index, `unknown field ${JSON.stringify(unknown[0])}`);
    if (typeof text !== 'string') throw bad(index, 'text must be a string');
    if (Buffer.byteLength(text, 'utf8') > NLP_BOUNDS.textBytes)
      throw bad(index, `text is longer than ${NLP_BOUNDS.textBytes} bytes`);
    if (labels !== undefined) {
      if (
        !Array.isArray(labels) ||
        labels.some((l) => typeof l !== 'string' || l.length === 0 || l.length > NLP_BOUNDS.labelLength)
      ) {
        throw bad(index, `labels must be an array of strings of 1-${NLP_BOUNDS.labelLength} characters`);
      }
      if (labels.length > NLP_BOUNDS.labels) throw bad(index, `at most ${NLP_BOUNDS.labels} labels`);
    }
    if (meta !== undefined && meta !== null) {
      if (typeof meta !== 'object' || Array.isArray(meta)) throw bad(index, 'meta must be an object');
      if (Buffer.byteLength(JSON.stringify(meta), 'utf8') > NLP_BOUNDS.metaBytes)
        throw bad(index, `meta is larger than ${NLP_BOUNDS.metaBytes} bytes`);
    }
    return {
      text,
      labels: (labels as string[] | undefined) ?? [],
      meta: (meta as Record<string, unknown> | null | undefined) ?? null,
    };
  });
}

/**
 * Parses a JSON Lines body (REST `upload_records` with `content-type: application/x-ndjson` or
 * `application/jsonl`): one JSON record per non-empty line; a line that is not JSON is refused
 * naming its record index (its line among the non-empty ones). The records then pass the guard
 * every JSON body passes (shared/json-guard.ts: depth, U+0000, unpaired surrogates), counted as
 * the JSON body `{"records": [...]}` they stand for, so either transport refuses the same input.
 */
export function jsonLinesRecords(body: string): unknown[] {
  const records: unknown[] = [];
  for (const line of body.split('\n')) {
    if (line.trim() === '') continue;
    try {
      records.push(JSON.parse(line));
    } catch {
      throw new ServiceError(
        'invalid_request_body',
        `Invalid params: records[${records.length}]: the line is not JSON`,
      );
    }
  }
  const problem = jsonProblem({ records });
  if (problem !== null) throw new ServiceError('invalid_request_body', `Invalid body: ${problem}.`);
  return records;
}
