import { z } from 'zod';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { limitById } from '../../shared/limits/catalog.ts';
import { limitsInForce } from '../../shared/limits/in-force.ts';
import { takeSlot } from '../../shared/limits/holdings.ts';
import { limitRefusal, type LimitInForce } from '../../shared/limits/index.ts';
import {
  DEFAULT_TIMEZONE,
  knownGapSeconds,
  nextFire,
  parseCron,
  shortestGapSeconds,
  type ParsedCron,
} from '../../shared/scheduler/cron.ts';
import { armFire } from '../../shared/scheduler/fire-jobs.ts';
import { QueueFullError } from '../../shared/fair-queue.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { AppContext } from '../context.ts';
import { runRecord, scheduleRecord } from '../../shared/scheduler/schedule-record.ts';
import { checkedInput, resolveTarget } from '../scheduler/target.ts';
import {
  deleteSchedule,
  findSchedule,
  insertSchedule,
  lastRun,
  runListing,
  scheduleListing,
  updateSchedule,
  type ScheduleFields,
} from '../sql/schedules.ts';
import { claimingAlias } from '../sql/unique.ts';
import { requireEnabledLimit } from '../limits/entitlement.ts';
import { readRecordPage, recordCursorParams } from '../workflow/record-cursor.ts';
import { defineCommand } from './command.ts';
import { scheduleRunSchema, scheduleSchema } from '../openapi/records.ts';

const scheduleResult = z.strictObject({ schedule: scheduleSchema });

const SCHEDULER = ['svc.compute.scheduler'] as const;

/**
 * The shortest interval no override can pass: an expression whose wall-clock gap is under it is
 * refused without walking its clock changes (shortestGapSeconds).
 */
const INTERVAL_FLOOR = limitById('scheduler.min_interval_seconds').most_permissive;

/**
 * Cron checks not answered from the cache take turns (AppContext.cronChecks): one at a time on a
 * control plane, organizations taking turns, 16 of an organization waiting. A check runs in
 * slices of the event loop (shared/scheduler/cron.ts), but every check in progress puts a slice
 * ahead of each step of every other request: four clients checking costly expressions at once
 * delayed another tenant's requests by a slice per check at every await.
 */
export const CRON_CHECK_TURNS = { concurrency: 1, perKey: 1, maxWaitingPerKey: 16 };

/** The shortest gap of `parsed` (shortestGapSeconds), computed in `orgId`'s turn unless known. */
async function gapInTurn(ctx: AppContext, orgId: string, parsed: ParsedCron): Promise<number> {
  const known = knownGapSeconds(parsed);
  if (known !== undefined) return known;
  try {
    return await ctx.cronChecks.run(orgId, () => shortestGapSeconds(parsed, INTERVAL_FLOOR));
  } catch (error) {
    if (!(error instanceof QueueFullError)) throw error;
    const busy = new ServiceError(
      'rate_limited',
      `${error.waiting} cron expressions of this organization are already waiting to be checked; try again in 1 s.`,
    );
    busy.retryAfterSeconds = 1;
    throw busy;
  }
}

const targetSchema = z.strictObject({ revision_id: refSchema, session_id: refSchema, definition_id: refSchema });
const cronSchema = z.string().min(1).max(200);
const timezoneSchema = z.string().min(1).max(64);

/**
 * `scheduler.min_interval_seconds` of the scheduler blob against the expression's shortest gap
 * between two consecutive fires (shared/scheduler/cron.ts), which is computed before any lock.
 */
function requireInterval(inForce: LimitInForce, parsed: ParsedCron, gap: number): void {
  if (typeof inForce.value === 'number' && gap < inForce.value) {
    throw limitRefusal(
      'limit_exceeded',
      inForce,
      undefined,
      `"${parsed.expression}" in ${parsed.timezone} fires as little as ${gap} s apart; limit scheduler.min_interval_seconds is ${inForce.value}.`,
    );
  }
}

/**
 * `create_schedule {alias?, cron, timezone?, target {revision_id, session_id, definition_id},
 * input_data?, enabled?}` → `schedule`. Checks, in order: the params, the cron and time zone
 * (400), the target (403 unless the caller can write it; 400 for a session or definition not of
 * that revision), the input against the target's `workflow.execution_input_bytes`, then
 * `scheduler.enabled`, `scheduler.schedules_per_revision` (its slot taken in the insert's
 * transaction) and `scheduler.min_interval_seconds`. An enabled schedule's first fire job is sent
 * in the same transaction.
 */
const createSchedule = defineCommand({
  name: 'create_schedule',
  result: scheduleResult,
  blobTypes: SCHEDULER,
  role: 'write',
  creates: true,
  params: z.strictObject({
    alias: aliasSchema.optional(),
    cron: cronSchema,
    timezone: timezoneSchema.optional(),
    target: targetSchema,
    input_data: z.unknown().optional(),
    enabled: z.boolean().optional(),
  }),
  async handler(ctx, principal, params, call) {
    const { blob, revision } = call.revision;
    const now = new Date();
    const parsed = parseCron(params.cron, params.timezone ?? DEFAULT_TIMEZONE, now);
    const target = await resolveTarget(ctx, principal, params.target);
    const inputJson = await checkedInput(ctx, target, params.input_data);
    const gap = await gapInTurn(ctx, blob.org_id, parsed);
    const enabled = params.enabled ?? true;
    const next = enabled ? nextFire(parsed, now) : null;
    const schedule = await ctx.db.transaction(async (tx) => {
      // The scheduler blob's limits, resolved once for the three checks.
      const limits = await limitsInForce(tx, { blobId: blob.id });
      requireEnabledLimit(limits['scheduler.enabled']);
      await takeSlot(tx, 'scheduler.schedules_per_revision', revision.id, limits['scheduler.schedules_per_revision']);
      requireInterval(limits['scheduler.min_interval_seconds'], parsed, gap);
      const fields: ScheduleFields = {
        alias: params.alias ?? null,
        cron: parsed.expression,
        timezone: parsed.timezone,
        targetRevisionId: target.revisionId,
        targetSessionId: target.sessionId,
        targetDefinitionId: target.definitionId,
        inputJson,
        enabled,
        nextFireAt: next,
      };
      const row = await claimingAlias('schedule of this revision', () =>
        insertSchedule(tx, revision.id, principal.userId, fields),
      );
      if (next !== null) await armFire(ctx.queue, tx, row.id);
      return row;
    });
    return { schedule: scheduleRecord(schedule) };
  },
});

/**
 * `update_schedule {schedule_id, alias?, cron?, timezone?, target?, input_data?, enabled?}` →
 * `schedule`. Only the fields sent change (`alias: null` removes the alias, `input_data: null`
 * the input). Every update is checked as if it created the schedule it leaves: the target (the
 * new one, or the current one) must be one the caller can write, and the input (sent or kept) is
 * measured against that target's `workflow.execution_input_bytes`; the caller becomes
 * `updated_by`, the account the fires act as. A new cron or time zone is checked against
 * `scheduler.min_interval_seconds`. When the timing changes (cron, time zone, or enabling) the
 * next fire is computed from now and its job sent; the job of the old next fire then fires nothing.
 */
const updateScheduleCommand = defineCommand({
  name: 'update_schedule',
  result: scheduleResult,
  blobTypes: SCHEDULER,
  role: 'write',
  params: z.strictObject({
    schedule_id: refSchema,
    alias: aliasSchema.nullable().optional(),
    cron: cronSchema.optional(),
    timezone: timezoneSchema.optional(),
    target: targetSchema.optional(),
    input_data: z.unknown().optional(),
    enabled: z.boolean().optional(),
  }),
  async handler(ctx, principal, params, call) {
    const { blob, revision } = call.revision;
    const now = new Date();
    const current = await findSchedule(ctx.db, revision.id, params.schedule_id);
    const timing = params.cron !== undefined || params.timezone !== undefined;
    const parsed = parseCron(params.cron ?? current.cron, params.timezone ?? current.timezone, now);
    const gap = timing ? await gapInTurn(ctx, blob.org_id, parsed) : undefined;
    // Whoever changes anything of a schedule makes its fires run as them, so they must be able to
    // write what it runs: a scheduler writer may not drive a workflow only its owner can run.
    const target = await resolveTarget(
      ctx,
      principal,
      params.target ?? {
        revision_id: current.target_revision_id,
        session_id: current.target_session_id,
        definition_id: current.target_definition_id,
      },
    );
    const inputJson = await checkedInput(
      ctx,
      target,
      params.input_data === undefined ? current.input_data : params.input_data,
    );

    const schedule = await ctx.db.transaction(async (tx) => {
      const row = await findSchedule(tx, revision.id, current.id, true);
      const enabled = params.enabled ?? row.enabled;
      if (gap !== undefined || (enabled && !row.enabled)) {
        const limits = await limitsInForce(tx, { blobId: blob.id });
        if (gap !== undefined) requireInterval(limits['scheduler.min_interval_seconds'], parsed, gap);
        if (enabled && !row.enabled) requireEnabledLimit(limits['scheduler.enabled']);
      }
      const rearm = enabled && (timing || !row.enabled);
      const next = !enabled ? null : rearm ? nextFire(parsed, now) : new Date(row.next_fire_at!);
      const fields: ScheduleFields = {
        alias: params.alias === undefined ? row.alias : params.alias,
        cron: parsed.expression,
        timezone: parsed.timezone,
        targetRevisionId: target.revisionId,
        targetSessionId: target.sessionId,
        targetDefinitionId: target.definitionId,
        // The input checked above: a concurrent update that changed it in between is overwritten
        // by the one this caller was checked against, never combined with it.
        inputJson,
        enabled,
        nextFireAt: next,
      };
      const updated = await claimingAlias('schedule of this revision', () =>
        updateSchedule(tx, row.id, principal.userId, fields),
      );
      if (rearm && next !== null) await armFire(ctx.queue, tx, row.id);
      return updated;
    });
    return { schedule: scheduleRecord(schedule) };
  },
});

/** `get_schedule {schedule_id}` → `schedule` with `last_run` (null before the first fire). */
const getSchedule = defineCommand({
  name: 'get_schedule',
  result: z.strictObject({ schedule: scheduleSchema.extend({ last_run: scheduleRunSchema.nullable() }) }),
  blobTypes: SCHEDULER,
  role: 'read',
  params: z.strictObject({ schedule_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const schedule = await findSchedule(ctx.db, call.revision.revision.id, params.schedule_id);
    const run = await lastRun(ctx.db, schedule.id);
    return { schedule: { ...scheduleRecord(schedule), last_run: run === undefined ? null : runRecord(run) } };
  },
});

/** `delete_schedule {schedule_id}` → `schedule` (as it was). Its runs go with it and its slot is freed. */
const deleteScheduleCommand = defineCommand({
  name: 'delete_schedule',
  result: scheduleResult,
  blobTypes: SCHEDULER,
  role: 'write',
  params: z.strictObject({ schedule_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const schedule = await ctx.db.transaction(async (tx) => {
      const row = await findSchedule(tx, call.revision.revision.id, params.schedule_id, true);
      return (await deleteSchedule(tx, row.id)) ?? row;
    });
    return { schedule: scheduleRecord(schedule) };
  },
});

/** `list_schedules {start_session_id?}` → `schedules, last_session_id` (record cursor, 10, newest first). */
const listSchedules = defineCommand({
  name: 'list_schedules',
  result: z.strictObject({ schedules: z.array(scheduleSchema), last_session_id: z.uuid().nullable() }),
  blobTypes: SCHEDULER,
  role: 'read',
  params: z.strictObject({ ...recordCursorParams }),
  async handler(ctx, _principal, params, call) {
    const page = await readRecordPage(scheduleListing(ctx.db, call.revision.revision.id), params.start_session_id);
    return { schedules: page.rows.map(scheduleRecord), last_session_id: page.last_session_id };
  },
});

/**
 * `list_executions {schedule_id, start_session_id?}` on a scheduler revision → `executions` (the
 * schedule's runs: `started` with the execution's id, `refused` with the `limit` object,
 * `failed` with the error), `last_session_id` (record cursor, 10, newest first).
 */
const listScheduleRuns = defineCommand({
  name: 'list_executions',
  result: z.strictObject({ executions: z.array(scheduleRunSchema), last_session_id: z.uuid().nullable() }),
  blobTypes: SCHEDULER,
  role: 'read',
  params: z.strictObject({ schedule_id: refSchema, ...recordCursorParams }),
  async handler(ctx, _principal, params, call) {
    const schedule = await findSchedule(ctx.db, call.revision.revision.id, params.schedule_id);
    const page = await readRecordPage(runListing(ctx.db, schedule.id), params.start_session_id);
    return { executions: page.rows.map(runRecord), last_session_id: page.last_session_id };
  },
});

/** The scheduler commands, in the order the docs list them. */
export const scheduleCommands = [
  createSchedule,
  updateScheduleCommand,
  getSchedule,
  deleteScheduleCommand,
  listSchedules,
  listScheduleRuns,
] as const;
