-- Execution ownership for the runners. pg-boss delivers wake-ups; which runner owns an execution
-- is decided here, by a lease on the execution row, so a runner that dies loses its executions
-- within one lease period and another runner resumes them from the last persisted node.
ALTER TABLE executions
  ADD COLUMN revision_id uuid,
  ADD COLUMN blob_id     uuid,
  ADD COLUMN lease_owner uuid,
  ADD COLUMN lease_until timestamptz,
  ADD COLUMN wake_at     timestamptz;
COMMENT ON COLUMN executions.attempts IS 'times a runner took the execution over after its previous lease expired (crash recovery)';
CREATE INDEX executions_lease_idx ON executions (lease_until) WHERE ended_at IS NULL;
