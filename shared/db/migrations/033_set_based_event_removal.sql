-- Removing executions removed their execution events through the foreign key's ON DELETE CASCADE,
-- which PostgreSQL runs as one `DELETE FROM execution_events WHERE execution_id = $1` per removed
-- execution: a retention batch of 500 executions was 500 more statements, and over a year of
-- history half of a sweep's time (docs/retention.md). The events now go with one statement per
-- statement that removes executions (a retention batch, or a session's removal), joined to the
-- removed rows: a set-based delete whatever the batch's size.
--
-- The foreign key's other half, the check at insert, is kept by the writers themselves: every
-- statement that appends an execution event first updates or locks the execution's row in the
-- same transaction (claim, node steps, the end), so an execution removed meanwhile is either
-- waited for (its removal then sees the committed events) or gone (nothing is written).
ALTER TABLE execution_events DROP CONSTRAINT execution_events_execution_id_fkey;

CREATE FUNCTION execution_events_removed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM execution_events ev USING removed r WHERE ev.execution_id = r.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER execution_events_removed AFTER DELETE ON executions
  REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION execution_events_removed();

