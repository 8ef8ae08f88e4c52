import type { Tx } from '../../shared/db/db.ts';
import { isServiceError } from '../../shared/errors.ts';
import { SUCCESS } from '../../shared/workflow/processors.ts';
import type { NodeError, NodeResult, RunContext } from './processor.ts';

/**
 * What the session-writing processors (`thread.post`, `object.put`, `graph.mutate`) share: one
 * write in one transaction through the same shared write path as the REST command, and a refusal
 * of that path turned into the node's failure.
 */

/** A refusal as a node error: the code, the message and, for a ceiling or quota, the limit object. */
function nodeErrorOf(error: { code: string; message: string; extras?: { limit?: NodeError['limit'] } }): NodeError {
  const limit = error.extras?.limit;
  return limit === undefined
    ? { code: error.code, message: error.message }
    : { code: error.code, message: error.message, limit };
}

/**
 * Runs `write` in one transaction on `ctx.db` and passes `input` on along `success`. A refusal
 * (a catalogued ServiceError: a ceiling, a quota, a malformed value, a session gone or being
 * deleted) rolls the write back and becomes a `failure` for the node's failure route; these are
 * refusals of one write, not breaches of the run's own limits, so they never raise `flow.error`.
 * Anything else (the database gone, a bug) is thrown as is: it is no refusal the graph can
 * handle, and the engine reports it (runner/engine/interpreter.ts: `internal_error`).
 */
export async function writeThenPassOn(
  ctx: RunContext,
  input: unknown,
  write: (tx: Tx) => Promise<unknown>,
): Promise<NodeResult> {
  try {
    await ctx.db.transaction(write);
  } catch (error) {
    if (isServiceError(error)) return { kind: 'failure', error: nodeErrorOf(error) };
    throw error;
  }
  return { kind: 'route', route: SUCCESS, output: input };
}
