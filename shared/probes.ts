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

/**
 * A readiness check bounded by `timeoutMs`, so a hanging database answers "not ready" in time.
 * The probe needs no credentials, so calls that arrive while one is in flight share its query: a
 * flood of probes costs the database one query at a time.
 */
export function readinessProbe(db: Queryable, isStopping: () => boolean, timeoutMs = 2_000): () => Promise<Readiness> {
  let expected: Promise<string[]> | undefined;
  let inFlight: Promise<{ database: boolean; migrated: boolean }> | null = null;
  const check = async () => {
    expected ??= migrationFiles();
    const files = await expected;
    let timer: NodeJS.Timeout | undefined;
    try {
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      });
      const { rows } = await Promise.race([db.query<{ name: string }>('SELECT name FROM schema_migrations'), deadline]);
      const applied = new Set(rows.map((r) => r.name));
      return { database: true, migrated: files.every((file) => applied.has(file)) };
    } catch {
      return { database: false, migrated: false };
    } finally {
      clearTimeout(timer);
    }
  };
  return async () => {
    inFlight ??= check().finally(() => {
      inFlight = null;
    });
    const { database, migrated } = await inFlight;
    const stopping = isStopping();
    return { ready: database && migrated && !stopping, checks: { database, migrated, stopping } };
  };
}
