-- A schedule's next fire was a pg-boss job sent as soon as the fire was known, delayed to its due
-- time: 50,000 schedules meant 50,000 deferred jobs standing in the queue, which pg-boss's fetch
-- walks at every poll of every runner (fire lag p99 26 → 238–467 ms) and warns about every
-- minute. A fire's job is now sent only once it falls due within the next minute
-- (shared/scheduler/fire-jobs.ts, FIRE_HORIZON_SECONDS), by whoever moves the schedule there or
-- by the runners' promoter (runner/scheduler/fire-loop.ts); `fire_sent_for` is the due time whose
-- job was sent, so the promoter finds the schedules still to send through the partial index
-- below, in due order, and never sends one twice.
ALTER TABLE schedules ADD COLUMN fire_sent_for timestamptz;

-- The schedules of before keep `fire_sent_for` NULL (no rewrite of the table): their job was sent
-- already, and the promoter sends it once more as their fire enters the horizon, which fires
-- nothing more (the fire decides under the row lock; docs/scheduler.md, "Exactly once").

-- The migrator runs each file in a transaction, where CREATE INDEX CONCURRENTLY cannot run: the
-- index is built plainly and holds writes to `schedules` (creates, updates, fires) for the build,
-- a fraction of a second at tens of thousands of rows; the column is added without a rewrite.
CREATE INDEX schedules_unsent_idx ON schedules (next_fire_at)
  WHERE enabled AND fire_sent_for IS DISTINCT FROM next_fire_at;
