-- The scheduler (docs/scheduler.md): schedules of a scheduler revision, and the history of their
-- fires. A schedule's next fire is one pg-boss job (`schedule-fires`) whose due time equals
-- `next_fire_at`; the fire that finds its due time still there is the only one that fires it.

CREATE TABLE schedules (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  revision_id          uuid NOT NULL REFERENCES revisions (id) ON DELETE CASCADE,
  alias                text,
  cron                 text NOT NULL,
  timezone             text NOT NULL,
  -- The target is checked when the schedule is written and again at every fire: a target deleted
  -- since is a failed run that disables the schedule, so these are not foreign keys.
  target_revision_id   uuid NOT NULL,
  target_session_id    uuid NOT NULL,
  target_definition_id uuid NOT NULL,
  input_data           jsonb,
  enabled              boolean NOT NULL,
  -- Null while disabled.
  next_fire_at         timestamptz,
  created_by           uuid NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT schedules_alias_key UNIQUE (revision_id, alias),
  CHECK (enabled = (next_fire_at IS NOT NULL))
);
-- Record-cursor listing: newest first within a revision.
CREATE INDEX schedules_listing_idx ON schedules (revision_id, created_at DESC, id DESC);
-- The reconciler: enabled schedules whose fire is overdue.
CREATE INDEX schedules_due_idx ON schedules (next_fire_at) WHERE enabled;

CREATE TABLE schedule_runs (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  schedule_id  uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  -- The fire time the cron named; null for a fire asked for by an operator (fireScheduleNow).
  due_at       timestamptz,
  fired_at     timestamptz NOT NULL DEFAULT now(),
  status       text NOT NULL CHECK (status IN ('started', 'refused', 'failed')),
  execution_id uuid,
  error        jsonb,
  "limit"      jsonb,
  -- Named `created_at` for the record-cursor listing (the same instant as fired_at).
  created_at   timestamptz NOT NULL DEFAULT now(),
  -- Exactly once: one run per due time, whatever fires it.
  CONSTRAINT schedule_runs_due_key UNIQUE (schedule_id, due_at),
  CHECK ((status = 'started') = (execution_id IS NOT NULL))
);
CREATE INDEX schedule_runs_listing_idx ON schedule_runs (schedule_id, created_at DESC, id DESC);
CREATE INDEX schedule_runs_retention_idx ON schedule_runs (fired_at);

-- Executions a schedule fired name it (the column exists since 005).
CREATE INDEX executions_schedule_idx ON executions (schedule_id) WHERE schedule_id IS NOT NULL;
