-- Tenant isolation in the runners (docs/sandbox.md, "Hostile code").
--
-- sandbox_cooldowns: an organization whose code made the sandbox lose an isolate thread (an
-- allocation bomb isolated-vm could not stop) is cooled down: its logic.code runs fail at once with
-- code_cooldown until `until`, a period that doubles with each strike (30 s, 1 min, 2 min, … 1 h).
-- Strikes older than a day are forgotten at the next one. The row goes with its organization.
CREATE TABLE sandbox_cooldowns (
  org_id uuid PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
  strikes integer NOT NULL CHECK (strikes > 0),
  until timestamptz NOT NULL,
  reason text NOT NULL,
  last_strike_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_cooldowns_until ON sandbox_cooldowns (until);

-- What each runner's sandbox is doing, written with its heartbeat (every 5 s): isolates busy and
-- idle, runs waiting and holding isolates by organization. Read by the ops API's `runners`.
ALTER TABLE runners ADD COLUMN sandbox jsonb;
