import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid, refSchema } from '../../shared/ids.ts';
import { limitExceeded } from '../../shared/limits/index.ts';
import { announceCancel, endExecution } from '../../shared/workflow/execution-end.ts';
import { executionRecord, type ExecutionRecordRow } from '../../shared/workflow/execution-record.ts';
import type { Queryable } from '../../shared/db/db.ts';
import { executionListing, findExecution, findRerunSource } from '../sql/executions.ts';
import { enqueueExecution, fairPriority } from '../../shared/queue/execution-jobs.ts';
import { rerunExecutionRow } from '../../shared/workflow/create-execution.ts';
import { readRecordPage, recordCursorParams } from '../workflow/record-cursor.ts';
import { findSession } from '../workflow/session-ref.ts';
import { defineCommand, WORKFLOW_BLOBS } from './command.ts';
import { executionSchema } from '../openapi/records.ts';

const executionResult = z.strictObject({ execution: executionSchema });

/** The execution `ref` of the revision; 404 otherwise (executions have ids only, never aliases). */
async function executionOf(q: Queryable, revisionId: string, ref: string): Promise<ExecutionRecordRow> {
  const row = isUuid(ref) ? await findExecution(q, revisionId, ref) : undefined;
  if (row === undefined) throw new ServiceError('not_found', 'No such execution.');
  return row;
}

// The database's refusals (other than limits) as the client sees them.
const NOT_CREATED = {
  session_not_found: () => new ServiceError('not_found', 'No such session.'),
  session_deleting: () => new ServiceError('conflict', 'The session is being deleted.'),
  definition_not_found: () => new ServiceError('not_found', 'No such definition.'),
} as const;

/**
 * `create_execution {session_id, definition_id, input_data?}` → `execution` (`queued`). The
 * definition (id or alias) must be of this revision and the session active (409 while deleting).
 * Refusals, in order: `workflow.execution_input_bytes` (the input's JSON serialization in UTF-8
 * bytes), `workflow.running_executions_per_org` (the organization of the session's blob), then
 * `workflow.executions_per_session`. Every limit is resolved once, from the session's blob, and
 * the five run limits are stored with the execution. The quota slots, the row, the
 * `execution.created` session event and the runner's wake-up job are one transaction: neither the
 * execution nor its job can exist without the other. All but the job is one round trip
 * (createExecutionRow); the job is pg-boss's own insert on the same transaction.
 */
const createExecution = defineCommand({
  name: 'create_execution',
  result: executionResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  creates: true,
  params: z.strictObject({ session_id: refSchema, definition_id: refSchema, input_data: z.unknown().optional() }),
  async handler(ctx, _principal, params, call) {
    const { org, blob, revision } = call.revision;
    // Serialized once: the same text is measured for the ceiling and stored.
    const inputJson = JSON.stringify(params.input_data ?? null);
    const inputBytes = params.input_data === undefined ? 0 : Buffer.byteLength(inputJson, 'utf8');
    const fields = {
      revisionId: revision.id,
      orgId: org.id,
      blobId: blob.id,
      sessionRef: params.session_id,
      definitionRef: params.definition_id,
      inputJson,
      inputBytes,
    };
    // Batched with the creates in flight (group commit); the row and its job commit together.
    // Traced, the execution stores this span's traceparent: its runners' spans descend from it.
    const created =
      ctx.tracing === null
        ? await ctx.creates.create(fields)
        : await ctx.tracing.inSpan('create_execution', {}, async (span) => {
            const result = await ctx.creates.create({ ...fields, traceparent: span.traceparent });
            span.setAttributes(
              'refusal' in result ? { 'workflow.refusal': result.refusal } : { 'workflow.execution.id': result.id },
            );
            return result;
          });
    if ('refusal' in created) {
      throw created.refusal === 'limit' ? limitExceeded(created.limit, created.held) : NOT_CREATED[created.refusal]();
    }
    return { execution: executionRecord(created) };
  },
});

/** `get_execution {execution_id}` → `execution`; an execution of another revision is 404. */
const getExecution = defineCommand({
  name: 'get_execution',
  result: executionResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ execution_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    return { execution: executionRecord(await executionOf(ctx.db, call.revision.revision.id, params.execution_id)) };
  },
});

/**
 * `cancel_execution {execution_id}` → `execution`. An unfinished execution (queued, running or
 * sleeping) ends `cancelled` through endExecution, which frees its running slot in the same
 * statement and records `execution.finished`; a runner working on it hears of it at commit
 * (`announceCancel`) and stops the node's code at once. An execution that already ended comes back unchanged (200): cancelling is idempotent.
 */
const cancelExecution = defineCommand({
  name: 'cancel_execution',
  result: executionResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ execution_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const execution = await ctx.db.transaction(async (tx) => {
      const found = await executionOf(tx, call.revision.revision.id, params.execution_id);
      if (found.ended_at !== null) return found;
      // Announced whatever the status read: a runner may have claimed it since.
      if (await endExecution(tx, { executionId: found.id, status: 'cancelled', guard: 'unended' }))
        await announceCancel(tx, found.id);
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
const listExecutions = defineCommand({
  name: 'list_executions',
  result: z.strictObject({ executions: z.array(executionSchema), last_session_id: z.uuid().nullable() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ session_id: refSchema, ...recordCursorParams }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const page = await readRecordPage(executionListing(ctx.db, session.id), params.start_session_id);
    return { executions: page.rows.map(executionRecord), last_session_id: page.last_session_id };
  },
});

/** The node a re-run starts at and its input, from the original's row and the params. */
function rerunStart(
  source: { node: string | null; input: unknown; start: string; input_data: unknown; has_node: boolean },
  params: { from_node?: string | undefined; input_data?: unknown },
  inputGiven: boolean,
): { node: string; input: unknown } {
  const node = params.from_node ?? source.node;
  if (node === null)
    throw new ServiceError('invalid_request_body', 'The execution stopped at no node: name one in from_node.');
  if (!source.has_node)
    throw new ServiceError(
      'invalid_request_body',
      `from_node: ${JSON.stringify(node)} is not a node of the execution's graph.`,
    );
  if (inputGiven) return { node, input: params.input_data ?? null };
  // Only two inputs are kept: the one the execution stopped with, and its own input_data.
  if (node === source.node) return { node, input: source.input };
  if (node === source.start) return { node, input: source.input_data };
  throw new ServiceError(
    'invalid_request_body',
    `input_data is required: the input node ${JSON.stringify(node)} had is not kept (only that of the node the execution stopped at, and of the start node).`,
  );
}

/**
 * `rerun_execution {execution_id, from_node?, input_data?}` → `execution` (`queued`): a new
 * execution in the same session running the original's copy of the graph from `from_node`
 * (default: the node the original stopped at, its failed node) with `input_data` (default: the
 * input that node had). The original must have ended (409 otherwise). The limits of a create
 * apply, in the same order; the new record's `rerun_of` names the original, the original's
 * `rerun_by` the newest re-run. Row, links, session event and wake-up job are one transaction.
 */
const rerunExecution = defineCommand({
  name: 'rerun_execution',
  result: executionResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  creates: true,
  params: z.strictObject({
    execution_id: refSchema,
    from_node: z.string().min(1).max(64).optional(),
    input_data: z.unknown().optional(),
  }),
  async handler(ctx, _principal, params, call) {
    const { org, blob, revision } = call.revision;
    const inputGiven = Object.hasOwn(params, 'input_data');
    const created = await ctx.db.transaction(async (tx) => {
      const source = isUuid(params.execution_id)
        ? await findRerunSource(tx, revision.id, params.execution_id, params.from_node)
        : undefined;
      if (source === undefined) throw new ServiceError('not_found', 'No such execution.');
      if (source.ended_at === null)
        throw new ServiceError('conflict', 'The execution has not ended: only an ended execution can be re-run.');
      const start = rerunStart(source, params, inputGiven);
      const inputJson = JSON.stringify(start.input ?? null);
      const result = await rerunExecutionRow(tx, {
        originalId: source.id,
        revisionId: revision.id,
        orgId: org.id,
        blobId: blob.id,
        node: start.node,
        inputJson,
        inputBytes: Buffer.byteLength(inputJson, 'utf8'),
      });
      if ('refusal' in result) {
        if (result.refusal === 'limit') throw limitExceeded(result.limit, result.held);
        if (result.refusal === 'execution_not_found') throw new ServiceError('not_found', 'No such execution.');
        throw NOT_CREATED[result.refusal]();
      }
      await enqueueExecution(ctx.queue, tx, result.id, { priority: fairPriority(result.orgInFlight) });
      return executionOf(tx, revision.id, result.id);
    });
    return { execution: executionRecord(created) };
  },
});

/** The execution commands, in the order the docs list them. */
export const executionCommands = [
  createExecution,
  getExecution,
  cancelExecution,
  listExecutions,
  rerunExecution,
] as const;
