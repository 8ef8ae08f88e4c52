import type { IResolvers } from 'mercurius';
import { VERSION } from '../../shared/version.ts';
import { listRunners } from '../../shared/runner-registry.ts';
import { auditOpsModule } from './audit-schema.ts';
import { limitsOpsModule } from './limits-schema.ts';
import { retentionOpsModule } from './retention-schema.ts';
import { sandboxOpsModule } from './sandbox-schema.ts';
import { schedulerOpsModule } from './scheduler-schema.ts';
import type { OpsContext, OpsModule } from './ops-module.ts';

// The core part declares `Mutation` (with a no-op field) so that every other part can extend it.
const core: OpsModule = {
  typeDefs: /* GraphQL */ `
    type Query {
      "Answers as long as the control plane runs; database says whether a query round-trips."
      health: Health!
      "Every runner that registered (rows of runners silent for 7 days are pruned), newest first."
      runners: [Runner!]!
      "Every pg-boss queue with its job counts (each at most a minute old: see countedAt)."
      queues: [Queue!]!
    }

    type Mutation {
      "No-op, so that the type exists for other parts to extend."
      ping: Boolean!
    }

    type Health {
      "ok, or degraded while the database cannot be reached (database: false)."
      status: String!
      version: String!
      pid: Int!
      uptimeSeconds: Float!
      database: Boolean!
    }

    type Runner {
      id: ID!
      host: String!
      pid: Int!
      version: String!
      startedAt: String!
      heartbeatAt: String!
      "Set when the runner stopped cleanly; a runner that died keeps null and stops being alive."
      stoppedAt: String
      "Not stopped, and heartbeat within the last 15 seconds."
      alive: Boolean!
    }

    type Queue {
      name: String!
      policy: String!
      "Jobs waiting, deferred ones included."
      queuedCount: Int!
      "Jobs that could start now."
      readyCount: Int!
      deferredCount: Int!
      activeCount: Int!
      "Failed jobs still retained."
      failedCount: Int!
      totalCount: Int!
      "When the counts were taken."
      countedAt: String
    }
  `,
  resolvers: (ctx) => ({
    Query: {
      health: async () => {
        const database = await ctx.db.query('SELECT 1').then(
          () => true,
          () => false,
        );
        return {
          status: database ? 'ok' : 'degraded',
          version: VERSION,
          pid: process.pid,
          uptimeSeconds: process.uptime(),
          database,
        };
      },
      runners: async () =>
        (await listRunners(ctx.db)).map((r) => ({
          id: r.id,
          host: r.host,
          pid: r.pid,
          version: r.version,
          startedAt: r.started_at,
          heartbeatAt: r.heartbeat_at,
          stoppedAt: r.stopped_at,
          alive: r.alive,
          sandbox: r.sandbox,
        })),
      queues: async () =>
        Promise.all(
          (await ctx.boss.getQueues()).map(async (q) => {
            // force: counted now unless counted within the last minute, so a polling dashboard does not
            // run the aggregate over the job table on every request.
            const [stats] = await ctx.boss.getQueueStats(q.name, { force: true });
            return {
              name: q.name,
              policy: q.policy ?? 'standard',
              queuedCount: stats?.queuedCount ?? 0,
              readyCount: stats?.readyCount ?? 0,
              deferredCount: stats?.deferredCount ?? 0,
              activeCount: stats?.activeCount ?? 0,
              failedCount: stats?.failedCount ?? 0,
              totalCount: stats?.totalCount ?? 0,
              countedAt: stats?.capturedOn.toISOString() ?? null,
            };
          }),
        ),
    },
    Mutation: {
      ping: () => true,
    },
  }),
};

/** Every part of the operations schema. A feature adds its own module file and lists it here. */
const OPS_MODULES: OpsModule[] = [
  core,
  auditOpsModule,
  limitsOpsModule,
  retentionOpsModule,
  sandboxOpsModule,
  schedulerOpsModule,
];

/**
 * Joins `modules` into one schema and one resolver map. Two parts resolving the same field is a
 * programming error, reported at start rather than letting the later one win silently.
 */
export function opsSchema(
  ctx: OpsContext,
  modules: OpsModule[] = OPS_MODULES,
): { schema: string[]; resolvers: IResolvers } {
  const resolvers: Record<string, Record<string, unknown>> = {};
  for (const module of modules) {
    for (const [type, fields] of Object.entries(module.resolvers(ctx))) {
      const target = (resolvers[type] ??= {});
      for (const [field, resolver] of Object.entries(fields as Record<string, unknown>)) {
        if (field in target) throw new Error(`ops schema: ${type}.${field} is resolved by two modules`);
        target[field] = resolver;
      }
    }
  }
  return { schema: modules.map((m) => m.typeDefs), resolvers: resolvers as IResolvers };
}
