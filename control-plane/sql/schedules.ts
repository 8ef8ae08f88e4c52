import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { refColumn } from '../../shared/ids.ts';
import {
  RUN_COLUMNS,
  SCHEDULE_COLUMNS,
  type ScheduleRow,
  type ScheduleRunRow,
} from '../../shared/scheduler/schedule-record.ts';
import { tableListing, type RecordSource } from './table-listing.ts';

/** The fields of a schedule a write sets (create: all; update: the row after the change). */
export interface ScheduleFields {
  alias: string | null;
  cron: string;
  timezone: string;
  targetRevisionId: string;
  targetSessionId: string;
  targetDefinitionId: string;
  /** JSON text, or null for no input. */
  inputJson: string | null;
  enabled: boolean;
  nextFireAt: Date | null;
}

function values(f: ScheduleFields): unknown[] {
  return [
    f.alias,
    f.cron,
    f.timezone,
    f.targetRevisionId,
    f.targetSessionId,
    f.targetDefinitionId,
    f.inputJson,
    f.enabled,
    f.nextFireAt,
  ];
}

/** Inserts a schedule; a taken alias fails on `schedules_alias_key` (wrap in `claimingAlias`). */
export async function insertSchedule(
  q: Queryable,
  revisionId: string,
  createdBy: string,
  fields: ScheduleFields,
): Promise<ScheduleRow> {
  const { rows } = await q.query<ScheduleRow>(
    `INSERT INTO schedules AS sc (alias, cron, timezone, target_revision_id, target_session_id, target_definition_id, input_data, enabled, next_fire_at, revision_id, created_by, updated_by)
     VALUES ($1, $2, $3, $4::uuid, $5::uuid, $6::uuid, $7::jsonb, $8, $9::timestamptz, $10::uuid, $11::uuid, $11::uuid)
     RETURNING ${SCHEDULE_COLUMNS}`,
    [...values(fields), revisionId, createdBy],
  );
  return rows[0]!;
}

/**
 * Writes every field of schedule `id` (the caller merged the change into the row it locked), and
 * `updatedBy` as the account its fires now act as.
 */
export async function updateSchedule(
  q: Queryable,
  id: string,
  updatedBy: string,
  fields: ScheduleFields,
): Promise<ScheduleRow> {
  const { rows } = await q.query<ScheduleRow>(
    `UPDATE schedules sc SET alias = $1, cron = $2, timezone = $3, target_revision_id = $4::uuid, target_session_id = $5::uuid,
            target_definition_id = $6::uuid, input_data = $7::jsonb, enabled = $8, next_fire_at = $9::timestamptz,
            updated_by = $11::uuid
      WHERE sc.id = $10::uuid RETURNING ${SCHEDULE_COLUMNS}`,
    [...values(fields), id, updatedBy],
  );
  return rows[0]!;
}

/** The revision's schedule named by id or alias (404 otherwise); `lock` takes its row lock. */
export async function findSchedule(q: Queryable, revisionId: string, ref: string, lock = false): Promise<ScheduleRow> {
  const { rows } = await q.query<ScheduleRow>(
    `SELECT ${SCHEDULE_COLUMNS} FROM schedules sc WHERE sc.revision_id = $1::uuid AND sc.${refColumn(ref)} = $2${lock ? ' FOR UPDATE' : ''}`,
    [revisionId, ref],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'No such schedule.');
  return rows[0];
}

/** Deletes a schedule and, by cascade, its runs; its pending fire job then finds nothing to fire. */
export async function deleteSchedule(q: Queryable, id: string): Promise<ScheduleRow | undefined> {
  const { rows } = await q.query<ScheduleRow>(
    `DELETE FROM schedules sc WHERE sc.id = $1::uuid RETURNING ${SCHEDULE_COLUMNS}`,
    [id],
  );
  return rows[0];
}

/** The most recent run of the schedule, if it fired yet. */
export async function lastRun(q: Queryable, scheduleId: string): Promise<ScheduleRunRow | undefined> {
  const { rows } = await q.query<ScheduleRunRow>(
    `SELECT ${RUN_COLUMNS} FROM schedule_runs sr WHERE sr.schedule_id = $1::uuid ORDER BY sr.created_at DESC, sr.id DESC LIMIT 1`,
    [scheduleId],
  );
  return rows[0];
}

/** `list_schedules`: the revision's schedules, newest first (the record cursor). */
export function scheduleListing(q: Queryable, revisionId: string): RecordSource<ScheduleRow> {
  return tableListing<ScheduleRow>(q, {
    table: 'schedules',
    alias: 'sc',
    columns: SCHEDULE_COLUMNS,
    scopeColumn: 'revision_id',
    scopeId: revisionId,
  });
}

/** `list_executions` of a scheduler revision: the schedule's runs, newest first (the record cursor). */
export function runListing(q: Queryable, scheduleId: string): RecordSource<ScheduleRunRow> {
  return tableListing<ScheduleRunRow>(q, {
    table: 'schedule_runs',
    alias: 'sr',
    columns: RUN_COLUMNS,
    scopeColumn: 'schedule_id',
    scopeId: scheduleId,
  });
}
