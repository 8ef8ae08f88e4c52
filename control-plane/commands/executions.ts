import { z } from 'zod';
import type { RunLimits } from '../../shared/workflow/run-limits.ts';
import { appendSessionEvent } from '../../shared/events/store.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid, refSchema } from '../../shared/ids.ts';
import { takeSlot } from '../../shared/limits/holdings.ts';
import { limitsInForce } from '../../shared/limits/in-force.ts';
import { limitExceeded, type ResolvedLimits } from '../../shared/limits/index.ts';
import { enqueueExecution } from '../../shared/queue/execution-jobs.ts';
import { endExecution } from '../../shared/workflow/execution-end.ts';
import { executionRecord, RUN_LIMIT_IDS, type ExecutionRecordRow } from '../../shared/workflow/execution-record.ts';
import type { Queryable } from '../../shared/db/db.ts';
import { findDefinition } from '../sql/definitions.ts';
import { executionListing, findExecution, insertExecution } from '../sql/executions.ts';
import { readRecordPage, recordCursorParams } from '../workflow/record-cursor.ts';
import { findActiveSession, findSession } from '../workflow/session-ref.ts';
import { defineCommand } from './command.ts';

const WORKFLOW = ['svc.compute.workflow'] as const;

/** The five run limits as stored with an execution: limit id → the value resolved at creation. */
function runLimits(inForce: ResolvedLimits): RunLimits {
  return Object.fromEntries(RUN_LIMIT_IDS.map((id) => [id, inForce[id].value])) as unknown as RunLimits;
}

/** The execution `ref` of the revision; 404 otherwise (executions have ids only, never aliases). */
async function executionOf(q: Queryable, revisionId: string, ref: string): Promise<ExecutionRecordRow> {
  const row = isUuid(ref) ? await findExecution(q, revisionId, ref) : undefined;
  if (row === undefined) throw new ServiceError('not_found', 'No such execution.');
  return row;
}

/**
 * `create_execution {session_id, definition_id, input_data?}` → `execution` (`queued`). The
 * definition (id or alias) must be of this revision and the session active (409 while deleting).
 * Refusals, in order: `workflow.execution_input_bytes` (the input's JSON serialization in UTF-8
 * bytes), `workflow.running_executions_per_org` (the organization of the session's blob), then
 * `workflow.executions_per_session`. Every limit is resolved once, from the session's blob, and
 * the five run limits are stored with the execution. The quota slots, the row, the
 * `execution.created` session event and the runner's wake-up job are one transaction: neither the
 * execution nor its job can exist without the other.
 */
export const createExecution = defineCommand({
  name: 'create_execution',
  blobTypes: WORKFLOW,
  role: 'write',
  params: z.strictObject({ session_id: refSchema, definition_id: refSchema, input_data: z.unknown().optional() }),
  async handler(ctx, _principal, params, call) {
    const { org, blob, revision } = call.revision;
    const execution = await ctx.db.transaction(async (tx) => {
      // Read without a lock: a delete committing after this read leaves an execution in a session
      // that is going away, and the session's removal takes it (and frees its slots) by cascade.
      const session = await findActiveSession(tx, revision.id, params.session_id);
      const definition = await findDefinition(tx, revision.id, params.definition_id);
      if (definition === undefined) throw new ServiceError('not_found', 'No such definition.');
      const inForce = await limitsInForce(tx, { blobId: blob.id });
      const inputBytes = params.input_data === undefined ? 0 : Buffer.byteLength(JSON.stringify(params.input_data), 'utf8');
      const maxInput = inForce['workflow.execution_input_bytes'];
      if (inputBytes > maxInput.value) throw limitExceeded(maxInput);
      // Organization before session: the order in which deleting an organization locks them too.
      await takeSlot(tx, 'workflow.running_executions_per_org', org.id, inForce['workflow.running_executions_per_org']);
      await takeSlot(tx, 'workflow.executions_per_session', session.id, inForce['workflow.executions_per_session']);
      const row = await insertExecution(tx, {
        sessionId: session.id,
        orgId: org.id,
        blobId: blob.id,
        revisionId: revision.id,
        definitionId: definition.id,
        graph: definition.graph,
        inputData: params.input_data ?? null,
        limits: runLimits(inForce),
      });
      await appendSessionEvent(tx, {
        sessionId: session.id,
        executionId: row.id,
        kind: 'execution.created',
        attributes: { execution_id: row.id, definition_id: definition.id },
      });
      await enqueueExecution(ctx.queue, tx, row.id);
      return row;
    });
    return { execution: executionRecord(execution) };
  },
});

/** `get_execution {execution_id}` → `execution`; an execution of another revision is 404. */
export const getExecution = defineCommand({
  name: 'get_execution',
  blobTypes: WORKFLOW,
  role: 'read',
  params: z.strictObject({ execution_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    return { execution: executionRecord(await executionOf(ctx.db, call.revision.revision.id, params.execution_id)) };
  },
});

/**
 * `cancel_execution {execution_id}` → `execution`. An unfinished execution (queued, running or
 * sleeping) ends `cancelled` through endExecution, which frees its running slot in the same
 * statement and records `execution.finished`; a runner working on it notices at its next guarded
 * write. An execution that already ended comes back unchanged (200): cancelling is idempotent.
 */
export const cancelExecution = defineCommand({
  name: 'cancel_execution',
  blobTypes: WORKFLOW,
  role: 'write',
  params: z.strictObject({ execution_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const execution = await ctx.db.transaction(async (tx) => {
      const found = await executionOf(tx, call.revision.revision.id, params.execution_id);
      if (found.ended_at !== null) return found;
      await endExecution(tx, { executionId: found.id, status: 'cancelled', guard: 'unended' });
      // Read again either way: if a runner ended it first, that ending is the answer.
      return executionOf(tx, call.revision.revision.id, found.id);
    });
    return { execution: executionRecord(execution) };
  },
});

/**
 * `list_executions {session_id, start_session_id?}` → `executions, last_session_id`: the record
 * cursor, ten per page, newest first (a session being deleted still lists until it is removed).
 */
export const listExecutions = defineCommand({
  name: 'list_executions',
  blobTypes: WORKFLOW,
  role: 'read',
  params: z.strictObject({ session_id: refSchema, ...recordCursorParams }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const page = await readRecordPage(executionListing(ctx.db, session.id), params.start_session_id);
    return { executions: page.rows.map(executionRecord), last_session_id: page.last_session_id };
  },
});

/** The execution commands, in the order the docs list them. */
export const executionCommands = [createExecution, getExecution, cancelExecution, listExecutions] as const;
