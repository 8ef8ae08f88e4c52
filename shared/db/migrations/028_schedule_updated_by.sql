-- Who a schedule's fires act as (docs/scheduler.md, "Fires"): the account that last wrote the
-- schedule. Every create and update checks that its caller can write the target, so the fires run
-- with the standing of whoever last set what they run, never with that of an earlier writer whose
-- target and input another scheduler writer changed. Existing schedules were last set by their
-- creator as far as the fires knew.
ALTER TABLE schedules ADD COLUMN updated_by uuid;
UPDATE schedules SET updated_by = created_by;
ALTER TABLE schedules ALTER COLUMN updated_by SET NOT NULL;
