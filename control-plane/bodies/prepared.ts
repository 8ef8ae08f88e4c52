/**
 * A large command body as a body thread prepared it (./body-thread.ts), standing in for the
 * parsed params in the handler's path: the registry takes PreparedParams where it would parse the
 * params, `upload_records` takes PreparedRecords where it would check its records. Each throws
 * its refusal, if any, exactly where the small body's check would have thrown the same one.
 */
import type { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import type { RecordLiterals, RecordSlice, Refused } from './body-messages.ts';

function thrown(refused: Refused): never {
  throw new ServiceError('invalid_request_body', refused.refusal);
}

/** Checked records encoded as their INSERTs' array literals, or the refusal of their check. */
export class PreparedRecords {
  readonly #outcome: RecordLiterals | Refused;

  constructor(outcome: RecordLiterals | Refused) {
    this.#outcome = outcome;
  }

  /** The records, or the refusal checkedRecords would have thrown for them. */
  take(): PreparedRecords {
    if ('refusal' in this.#outcome) thrown(this.#outcome);
    return this;
  }

  /** How many records. */
  get length(): number {
    return 'count' in this.#outcome ? this.#outcome.count : 0;
  }

  /** The literals of each INSERT, RECORDS_PER_STATEMENT records each. */
  get slices(): readonly RecordSlice[] {
    return 'slices' in this.#outcome ? this.#outcome.slices : [];
  }
}

/** A command's params as its schema parsed them in a body thread, or that parse's refusal. */
export class PreparedParams {
  readonly #schema: z.ZodType;
  readonly #outcome: { params: Record<string, unknown> } | Refused;

  constructor(schema: z.ZodType, outcome: { params: Record<string, unknown> } | Refused) {
    this.#schema = schema;
    this.#outcome = outcome;
  }

  /** What `parseInput(schema, params, 'params')` returns, or throws what it throws. */
  parsedBy(schema: z.ZodType): Record<string, unknown> {
    // A programming error: the thread checked the params with another command's schema.
    if (schema !== this.#schema) throw new Error('params prepared for another schema');
    if ('refusal' in this.#outcome) thrown(this.#outcome);
    return this.#outcome.params;
  }
}
