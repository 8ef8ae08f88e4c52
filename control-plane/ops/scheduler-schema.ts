/**
 * The operations API's view of the scheduler (docs/scheduler.md, "Operations"): schedules by
 * organization or blob with their next fire and last run, and fireScheduleNow, which fires one
 * run now, recorded like any other, without moving the schedule's next fire.
 */
import mercurius from 'mercurius';
import { isUuid } from '../../shared/ids.ts';
import { fireSchedule } from '../../shared/scheduler/fire.ts';
import {
  runRecord,
  SCHEDULE_COLUMNS,
  RUN_COLUMNS,
  type ScheduleRow,
  type ScheduleRunRow,
} from '../../shared/scheduler/schedule-record.ts';
import type { OpsModule } from './ops-module.ts';

const MAX_LIST = 1_000;

interface ListedSchedule extends ScheduleRow {
  blob_id: string;
  org_id: string;
  last_run: ScheduleRunRow | null;
}

function scheduleOf(row: ListedSchedule) {
  return {
    id: row.id,
    alias: row.alias,
    orgId: row.org_id,
    blobId: row.blob_id,
    revisionId: row.revision_id,
    cron: row.cron,
    timezone: row.timezone,
    enabled: row.enabled,
    nextFireAt: row.next_fire_at,
    target: {
      revisionId: row.target_revision_id,
      sessionId: row.target_session_id,
      definitionId: row.target_definition_id,
    },
    createdBy: row.created_by,
    createdAt: row.created_at,
    lastRun: row.last_run === null ? null : runOf(row.last_run),
  };
}

// A run read through row_to_json carries PostgreSQL's timestamp text, not the pool's ISO form.
const iso = (at: string | null) => (at === null ? null : new Date(at).toISOString());

function runOf(row: ScheduleRunRow) {
  const record = runRecord(row) as { error: { code: string; message: string } | null; limit: unknown };
  return {
    id: row.id,
    scheduleId: row.schedule_id,
    dueAt: iso(row.due_at),
    firedAt: iso(row.fired_at),
    status: row.status,
    executionId: row.execution_id,
    error: record.error?.code ?? null,
    message: record.error?.message ?? null,
    limit: row.limit === null ? null : JSON.stringify(row.limit),
  };
}

function badArgument(message: string): Error {
  return new mercurius.ErrorWithProps(message, { code: 'invalid_argument' });
}

export const schedulerOpsModule: OpsModule = {
  typeDefs: /* GraphQL */ `
    extend type Query {
      "Schedules of an organization or of a scheduler blob (one of the two), soonest next fire first (disabled last), at most 1,000."
      schedules(orgId: ID, blobId: ID, limit: Int = 100): [Schedule!]!
    }

    extend type Mutation {
      "Fires the schedule once now, recorded in its history like any fire; its next fire does not move. Null when there is no such schedule."
      fireScheduleNow(scheduleId: ID!): ScheduleRun
    }

    type Schedule {
      id: ID!
      alias: String
      orgId: ID!
      blobId: ID!
      revisionId: ID!
      cron: String!
      timezone: String!
      enabled: Boolean!
      "ISO time of the next fire; null while disabled."
      nextFireAt: String
      target: ScheduleTarget!
      createdBy: ID!
      createdAt: String!
      lastRun: ScheduleRun
    }

    type ScheduleTarget {
      revisionId: ID!
      sessionId: ID!
      definitionId: ID!
    }

    type ScheduleRun {
      id: ID!
      scheduleId: ID!
      "The time the cron named; null for fireScheduleNow."
      dueAt: String
      firedAt: String!
      "started, refused (a limit; see limit) or failed (see error)."
      status: String!
      executionId: ID
      error: String
      message: String
      "The limit object of a refusal, as JSON."
      limit: String
    }
  `,
  resolvers: (ctx) => ({
    Query: {
      schedules: async (
        _root: unknown,
        args: { orgId?: string | null; blobId?: string | null; limit?: number | null },
      ) => {
        const by = args.orgId ? 'org' : args.blobId ? 'blob' : null;
        if (by === null || (args.orgId && args.blobId)) throw badArgument('Give exactly one of orgId and blobId.');
        const id = (args.orgId ?? args.blobId)!;
        if (!isUuid(id)) throw badArgument(`${by === 'org' ? 'orgId' : 'blobId'} must be an id.`);
        const limit = args.limit ?? 100;
        if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST)
          throw badArgument(`limit must be 1 to ${MAX_LIST}.`);
        const { rows } = await ctx.db.query<ListedSchedule>(
          `SELECT ${SCHEDULE_COLUMNS}, b.id AS blob_id, b.org_id,
                  (SELECT row_to_json(x) FROM (SELECT ${RUN_COLUMNS} FROM schedule_runs sr WHERE sr.schedule_id = sc.id
                    ORDER BY sr.created_at DESC, sr.id DESC LIMIT 1) x) AS last_run
             FROM schedules sc JOIN revisions r ON r.id = sc.revision_id JOIN blobs b ON b.id = r.blob_id
            WHERE ${by === 'org' ? 'b.org_id' : 'b.id'} = $1::uuid
            ORDER BY sc.next_fire_at ASC NULLS LAST, sc.id LIMIT $2::int`,
          [id, limit],
        );
        return rows.map(scheduleOf);
      },
    },
    Mutation: {
      fireScheduleNow: async (_root: unknown, args: { scheduleId: string }) => {
        if (!isUuid(args.scheduleId)) throw badArgument('scheduleId must be an id.');
        // Traced, the fire's span is a child of this request's, and the execution carries it.
        const outcome = await fireSchedule(
          ctx.db,
          ctx.boss,
          { scheduleId: args.scheduleId, dueAt: null },
          ctx.tracing ?? null,
        );
        return 'fired' in outcome ? runOf(outcome.fired) : null;
      },
    },
  }),
};
