/**
 * The runner's lease and recovery timings when nothing sets them, in seconds: the defaults of
 * RUNNER_LEASE_SECONDS, RUNNER_RENEW_SECONDS, RUNNER_SWEEP_SECONDS and RUNNER_ORPHAN_SECONDS
 * (shared/config.ts) and of `createEngine`'s options (runner/engine/engine.ts), kept here once so
 * that the two cannot drift apart.
 */
export const RUNNER_TIMING_DEFAULTS = {
  /** Lease of a claimed execution. */
  leaseSeconds: 10,
  /** Lease renewal period; less than the lease. */
  renewSeconds: 3,
  /** Recovery sweep period. */
  sweepSeconds: 5,
  /** Grace before an unheld execution without a pending wake-up gets a new one. */
  orphanSeconds: 30,
} as const;
