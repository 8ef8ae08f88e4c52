import mercurius from 'mercurius';
import { z } from 'zod';
import { listSweeps, runRecordedSweep, type SweepRecord } from '../../shared/retention/recorded-sweep.ts';
import { parseArgs } from './arguments.ts';
import type { OpsModule } from './ops-module.ts';

/** Listing bounds of `retentionSweeps`. */
const SWEEPS_LIST_DEFAULT = 20;
const SWEEPS_LIST_MAX = 100;

const sweepsArgs = z.strictObject({ limit: z.number().int().min(1).max(SWEEPS_LIST_MAX).nullish() });

function sweep(row: SweepRecord) {
  return {
    id: row.id,
    trigger: row.trigger,
    status: row.status,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    executionsRemoved: row.executions_removed,
    runsRemoved: row.runs_removed,
    idempotencyKeysRemoved: row.idempotency_keys_removed,
    error: row.error,
  };
}

/** The retention sweep in the operations API: run it now, and read its history. */
export const retentionOpsModule: OpsModule = {
  typeDefs: /* GraphQL */ `
    extend type Query {
      "Retention sweeps, newest first (daily ones by the runners and those run here). limit: 1..${SWEEPS_LIST_MAX}, default ${SWEEPS_LIST_DEFAULT}."
      retentionSweeps(limit: Int): [RetentionSweep!]!
    }

    extend type Mutation {
      """
      Runs the retention sweep now and answers when it has finished, with what it removed.
      Refused with extensions.code sweep_in_progress while another sweep (a runner's daily one or
      another call of this) is running: it is already doing the same work.
      """
      runRetentionSweep: RetentionSweep!
    }

    type RetentionSweep {
      id: ID!
      "daily (a runner's timer) or ops (runRetentionSweep)."
      trigger: String!
      """
      running, completed, interrupted (its runner stopped between batches), failed (see error), or
      abandoned (its process died mid-sweep).
      """
      status: String!
      startedAt: String!
      finishedAt: String
      "Finished executions removed with their events and data; each freed a slot in workflow.executions_per_session."
      executionsRemoved: Int!
      "Schedule runs removed: fired longer ago than scheduler.run_retention_days of their scheduler blob."
      runsRemoved: Int!
      "Idempotency keys removed: stored answers of keyed creates older than 24 hours."
      idempotencyKeysRemoved: Int!
      error: String
    }
  `,
  resolvers: (ctx) => ({
    Query: {
      retentionSweeps: async (_root: unknown, args: Record<string, unknown>) => {
        const { limit } = parseArgs(sweepsArgs, args);
        return (await listSweeps(ctx.db, limit ?? SWEEPS_LIST_DEFAULT)).map(sweep);
      },
    },
    Mutation: {
      runRetentionSweep: async () => {
        const result = await runRecordedSweep(ctx.db, {
          trigger: 'ops',
          ...(ctx.config.retention.sweepDutyPercent === null
            ? {}
            : { dutyPercent: ctx.config.retention.sweepDutyPercent }),
          backendNice: ctx.config.retention.sweepNice,
        });
        if (!result.ran) {
          throw new mercurius.ErrorWithProps('A retention sweep is already running; see retentionSweeps.', {
            code: 'sweep_in_progress',
          });
        }
        return sweep(result.sweep);
      },
    },
  }),
};
