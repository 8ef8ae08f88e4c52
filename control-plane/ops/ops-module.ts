import type { IResolvers } from 'mercurius';
import type { PgBoss } from 'pg-boss';
import type { Tracing } from '../../shared/tracing/tracing.ts';
import type { Config } from '../../shared/config.ts';
import type { Db } from '../../shared/db/db.ts';

/** What every operations resolver gets. */
export interface OpsContext {
  config: Config;
  db: Db;
  /** The control plane's pg-boss instance (sends jobs, reads queue counts). */
  boss: PgBoss;
  /** Spans of this process (fireScheduleNow's fire); null or absent while tracing is off. */
  tracing?: Tracing | null;
}

/**
 * One part of the operations schema: its SDL and its resolvers. A part adds fields to the root
 * types with `extend type Query { ... }` / `extend type Mutation { ... }` and is listed in
 * `OPS_MODULES` (./schema.ts), whose core part declares `Mutation` so that every part can extend it.
 */
export interface OpsModule {
  typeDefs: string;
  resolvers: (ctx: OpsContext) => IResolvers;
}
