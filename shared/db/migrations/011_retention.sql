-- The retention sweep's history: one row per sweep, written by whichever process ran it (a runner
-- once a day, or the operations API on demand). Sweeps are serialised by a session advisory lock
-- (shared/retention/recorded-sweep.ts), so at most one row is unfinished at a time; a row left
-- unfinished by a process that died is reported as abandoned by the ops API.
CREATE TABLE retention_sweeps (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  trigger            text NOT NULL CHECK (trigger IN ('daily', 'ops')),
  started_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at        timestamptz,
  -- NULL while it runs; `interrupted` = stopped between batches by a shutting-down runner.
  outcome            text CHECK (outcome IN ('completed', 'interrupted', 'failed')),
  executions_removed bigint NOT NULL DEFAULT 0,
  runs_removed       bigint NOT NULL DEFAULT 0,
  error              text,
  CHECK ((finished_at IS NULL) = (outcome IS NULL)),
  CHECK ((outcome = 'failed') = (error IS NOT NULL))
);
-- Newest first for the history, and "when did the last sweep complete" for the daily timer.
CREATE INDEX retention_sweeps_started_idx ON retention_sweeps (started_at DESC);
CREATE INDEX retention_sweeps_completed_idx ON retention_sweeps (started_at DESC) WHERE outcome = 'completed';
