import type { LimitObject } from '../errors.ts';

/** A schedule row as read with SCHEDULE_COLUMNS. */
export interface ScheduleRow {
  id: string;
  revision_id: string;
  alias: string | null;
  cron: string;
  timezone: string;
  target_revision_id: string;
  target_session_id: string;
  target_definition_id: string;
  input_data: unknown;
  enabled: boolean;
  next_fire_at: string | null;
  created_by: string;
  /** The account that last wrote the schedule: its fires act with this account's standing. */
  updated_by: string;
  created_at: string;
}

/** The select list of a ScheduleRow for the schedules row aliased `sc`. */
export const SCHEDULE_COLUMNS =
  'sc.id, sc.revision_id, sc.alias, sc.cron, sc.timezone, sc.target_revision_id, sc.target_session_id, sc.target_definition_id, sc.input_data, sc.enabled, sc.next_fire_at, sc.created_by, sc.updated_by, sc.created_at';

/** The schedule record (docs/scheduler.md, "Commands"; plus `revision_id`, the scheduler revision holding it). */
export function scheduleRecord(row: ScheduleRow): Record<string, unknown> {
  return {
    id: row.id,
    alias: row.alias,
    revision_id: row.revision_id,
    cron: row.cron,
    timezone: row.timezone,
    target: {
      revision_id: row.target_revision_id,
      session_id: row.target_session_id,
      definition_id: row.target_definition_id,
    },
    input_data: row.input_data,
    enabled: row.enabled,
    next_fire_at: row.next_fire_at,
    created_by: row.created_by,
    updated_by: row.updated_by,
    created_at: row.created_at,
  };
}

export type RunStatus = 'started' | 'refused' | 'failed';

/** Why a fire created no execution: the envelope's `error` code and message. */
export interface RunError {
  code: string;
  message: string;
}

/** A schedule run (one entry of a schedule's history) as read with RUN_COLUMNS. */
export interface ScheduleRunRow {
  id: string;
  schedule_id: string;
  due_at: string | null;
  fired_at: string;
  status: RunStatus;
  execution_id: string | null;
  error: RunError | null;
  limit: LimitObject | null;
  created_at: string;
}

/** The select list of a ScheduleRunRow for the schedule_runs row aliased `sr`. */
export const RUN_COLUMNS =
  'sr.id, sr.schedule_id, sr.due_at, sr.fired_at, sr.status, sr.execution_id, sr.error, sr."limit", sr.created_at';

/**
 * The schedule run record (docs/scheduler.md, "Commands"), plus `due_at`: the time the cron named (null for an
 * operator's fireScheduleNow), so `fired_at - due_at` is how late the fire was.
 */
export function runRecord(row: ScheduleRunRow): Record<string, unknown> {
  return {
    id: row.id,
    schedule_id: row.schedule_id,
    due_at: row.due_at,
    fired_at: row.fired_at,
    status: row.status,
    execution_id: row.execution_id,
    error: row.error,
    limit: row.limit,
  };
}
