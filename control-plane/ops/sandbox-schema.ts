/**
 * The operations API's view of tenant isolation in the runners (docs/sandbox.md, "Hostile code"):
 * each runner's sandbox as it reported with its last heartbeat (isolates busy and idle, runs
 * waiting by organization), and the organizations cooled down for breaking the sandbox, which an
 * operator may release early.
 */
import { clearCooldown, listCooldowns, type Cooldown } from '../../shared/sandbox/cooldowns.ts';
import type { OpsModule } from './ops-module.ts';

interface SnapshotJson {
  isolatesLive?: number;
  isolatesBusy?: number;
  isolatesIdle?: number;
  runsWaiting?: number;
  contexts?: number;
  contextsMade?: number;
  contextsReused?: number;
  isolatesRecycled?: number;
  memoryKills?: number;
  memoryBound?: { mechanism?: string; boundMb?: number; detail?: string };
  tenants?: Array<{ orgId: string; waiting: number; busy: number }>;
}

function cooldownOf(row: Cooldown) {
  return {
    orgId: row.orgId,
    strikes: row.strikes,
    until: row.until.toISOString(),
    reason: row.reason,
    lastStrikeAt: row.lastStrikeAt.toISOString(),
    active: row.until.getTime() > Date.now(),
  };
}

export const sandboxOpsModule: OpsModule = {
  typeDefs: /* GraphQL */ `
    extend type Query {
      "Organizations cooled down for breaking the sandbox (active ones only unless all is true), newest strike first, at most 1,000."
      sandboxCooldowns(all: Boolean = false): [SandboxCooldown!]!
    }

    extend type Mutation {
      "Ends an organization's cool-down now and forgets its strikes. False when it had none."
      clearSandboxCooldown(orgId: ID!): Boolean!
    }

    extend type Runner {
      "The runner's sandbox as of its last heartbeat (at most 5 s old); null before its first report."
      sandbox: RunnerSandbox
    }

    type RunnerSandbox {
      isolatesLive: Int!
      isolatesBusy: Int!
      isolatesIdle: Int!
      "Code runs waiting for an isolate (fair queue)."
      runsWaiting: Int!
      "Kept per-organization contexts."
      contexts: Int!
      "Contexts made since the runner's sandbox processes started (each a tenant's first run on an isolate, or a run whose context was evicted)."
      contextsMade: Float!
      "Runs that found their organization's context kept, since the same start."
      contextsReused: Float!
      "Isolates retired for their heap use or run count (their contexts go with them), since the same start."
      isolatesRecycled: Float!
      "Organizations with runs holding or waiting for an isolate, busiest first (at most 50)."
      organizations: [SandboxOrganization!]!
      "How each sandbox child process's memory is bounded (docs/sandbox.md, Memory); null from a runner that does not say."
      memoryBound: SandboxMemoryBound
      "Sandbox children killed past their memory bound, since the runner's engine threads started."
      memoryKills: Float!
    }

    type SandboxMemoryBound {
      "cgroup-v2 (a cgroup per child with memory.max) or rss-watchdog (resident memory sampled every 100 ms)."
      mechanism: String!
      "The bound of each child, MiB (SANDBOX_MEMORY_MB)."
      boundMb: Int!
      detail: String!
    }

    type SandboxOrganization {
      orgId: ID!
      waiting: Int!
      busy: Int!
    }

    type SandboxCooldown {
      orgId: ID!
      "Strikes within a day of each other; each doubles the cool-down (30 s up to 1 h)."
      strikes: Int!
      until: String!
      reason: String!
      lastStrikeAt: String!
      active: Boolean!
    }
  `,
  resolvers: (ctx) => ({
    Query: {
      sandboxCooldowns: async (_root: unknown, args: { all?: boolean }) =>
        (await listCooldowns(ctx.db, { activeOnly: !args.all })).map(cooldownOf),
    },
    Mutation: {
      clearSandboxCooldown: async (_root: unknown, args: { orgId: string }) => clearCooldown(ctx.db, args.orgId),
    },
    Runner: {
      sandbox: (runner: { sandbox?: SnapshotJson | null }) => {
        const s = runner.sandbox;
        if (!s || typeof s !== 'object') return null;
        return {
          isolatesLive: s.isolatesLive ?? 0,
          isolatesBusy: s.isolatesBusy ?? 0,
          isolatesIdle: s.isolatesIdle ?? 0,
          runsWaiting: s.runsWaiting ?? 0,
          contexts: s.contexts ?? 0,
          contextsMade: s.contextsMade ?? 0,
          contextsReused: s.contextsReused ?? 0,
          isolatesRecycled: s.isolatesRecycled ?? 0,
          organizations: Array.isArray(s.tenants) ? s.tenants : [],
          memoryKills: s.memoryKills ?? 0,
          memoryBound:
            s.memoryBound && typeof s.memoryBound.mechanism === 'string'
              ? {
                  mechanism: s.memoryBound.mechanism,
                  boundMb: s.memoryBound.boundMb ?? 0,
                  detail: s.memoryBound.detail ?? '',
                }
              : null,
        };
      },
    },
  }),
};
