/**
 * Health probes (docs/operations.md, "Probes"): `/healthz` answers while the process serves;
 * `/readyz` while it can do its work — the database answers, every migration this build ships is
 * applied, and it is not shutting down. The control plane answers them on its REST port, a runner
 * on its `METRICS_PORT`; neither asks for credentials or says more than which check failed.
 */
import { migrationFiles } from './db/migrate.ts';
import type { Queryable } from './db/db.ts';

export interface Readiness {
  ready: boolean;
  checks: { database: boolean; migrated: boolean; stopping: boolean };
}

/** A readiness check bounded by `timeoutMs`, so a hanging database answers "not ready" in time. */
export function readinessProbe(db: Queryable, isStopping: () => boolean, timeoutMs = 2_000): () => Promise<Readiness> {
  let expected: Promise<string[]> | undefined;
  return async () => {
    expected ??= migrationFiles();
    const files = await expected;
    let database = false;
    let migrated = false;
    try {
      const probe = db.query<{ name: string }>('SELECT name FROM schema_migrations');
      const timer = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref());
      const { rows } = await Promise.race([probe, timer]);
      database = true;
      const applied = new Set(rows.map((r) => r.name));
      migrated = files.every((file) => applied.has(file));
    } catch {
      // database stays false
    }
    const stopping = isStopping();
    return { ready: database && migrated && !stopping, checks: { database, migrated, stopping } };
  };
}
