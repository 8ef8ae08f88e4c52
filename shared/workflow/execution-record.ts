import type { RunLimits } from '../workflow/run-limits.ts';
import type { ExecutionError } from './execution-end.ts';

/** An execution's status: the first three are unfinished (`ended_at` null), the last three terminal. */
type ExecutionStatus = 'queued' | 'running' | 'sleeping' | 'succeeded' | 'failed' | 'cancelled';

/**
 * The five limits `create_execution` resolves once (from the session's blob) and stores with the
 * execution, which keeps them until it ends (docs/architecture.md, "Ceilings during a run").
 */
export const RUN_LIMIT_IDS = [
  'workflow.processor_runs_per_execution',
  'workflow.execution_seconds',
  'workflow.code_run_seconds',
  'workflow.code_imports',
  'workflow.session_objects_per_session',
] as const satisfies readonly (keyof RunLimits)[];

/** The columns of an execution a record is made of (the durable state and lease stay inside). */
export interface ExecutionRecordRow {
  id: string;
  session_id: string;
  definition_id: string;
  status: ExecutionStatus;
  input_data: unknown;
  output: unknown;
  error: ExecutionError | null;
  limits: RunLimits;
  node_runs: number;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  /** The execution this one re-runs (rerun_execution); absent where a statement did not read it. */
  rerun_of?: string | null;
  /** The newest re-run of this execution. */
  rerun_by?: string | null;
}

/** The select list of an ExecutionRecordRow for the executions row aliased `e`. */
export const EXECUTION_RECORD_COLUMNS =
  'e.id, e.session_id, e.definition_id, e.status, e.input_data, e.output, e.error, e.limits, e.node_runs, e.created_at, e.started_at, e.ended_at, e.rerun_of, e.rerun_by';

/**
 * The execution record (docs/executions.md, "The execution record"), plus `node_runs` (node runs started so far, the count
 * `workflow.processor_runs_per_execution` bounds) and `limits` (the five run limits the execution
 * resolved at creation and keeps), so a client can see how far a run is from its ceilings, and
 * the re-run links (`rerun_of`: the execution this one re-runs; `rerun_by`: its newest re-run).
 */
export function executionRecord(row: ExecutionRecordRow): Record<string, unknown> {
  return {
    id: row.id,
    session_id: row.session_id,
    definition_id: row.definition_id,
    status: row.status,
    input_data: row.input_data,
    output: row.output,
    error: row.error,
    created_at: row.created_at,
    started_at: row.started_at,
    ended_at: row.ended_at,
    node_runs: row.node_runs,
    limits: row.limits,
    rerun_of: row.rerun_of ?? null,
    rerun_by: row.rerun_by ?? null,
  };
}
