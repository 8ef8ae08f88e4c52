-- workflow.running_executions_per_org was counted at every create with count(*) over the
-- organization's unfinished executions: work in proportion to the backlog, and a backlog is what a
-- busy host has (runners yield the CPU: docs/architecture.md). The count is now the difference of
-- two totals kept by triggers in the statements that change the rows, so it cannot drift from them:
--
-- * orgs.executions_started: executions inserted unfinished. Only a create inserts, under the
--   organization's row lock, so this total is exact for the lock's holder.
-- * execution_ends: executions that stopped running (ended, or deleted while unfinished), one row
--   per organization and database connection (`backend` = pg_backend_pid()). Every end takes the
--   row of its own connection, so concurrent ends never wait on each other or on a create, and
--   never deadlock whatever order their statement visits organizations in. The recovery sweep
--   folds the rows of closed connections into the organization's row 0 (compact_execution_ends),
--   so an organization has about one row per open connection that ended something of it.
--
-- held = started - ended, read under the organization's lock. An end still committing is not seen
-- yet: the count is then one too high for a moment (a create may be refused that would fit a
-- moment later, as with count(*)), never too low.

ALTER TABLE orgs ADD COLUMN executions_started bigint NOT NULL DEFAULT 0;

-- No foreign key: ends of an organization's executions are counted while a cascade deletes the
-- organization itself; the sweep removes the rows of organizations that are gone.
CREATE TABLE execution_ends (
  org_id  uuid NOT NULL,
  backend integer NOT NULL,
  ended   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, backend)
);

UPDATE orgs o SET executions_started = c.n
  FROM (SELECT org_id, count(*) AS n FROM executions WHERE ended_at IS NULL GROUP BY org_id) AS c
 WHERE o.id = c.org_id;

-- Unfinished executions of an organization, from the two totals.
CREATE FUNCTION org_running_executions(p_org_id uuid) RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT (coalesce((SELECT o.executions_started FROM orgs o WHERE o.id = p_org_id), 0)
          - coalesce((SELECT sum(c.ended) FROM execution_ends c WHERE c.org_id = p_org_id), 0))::int
$$;

-- One function for both per-row counts of an insert (migration 014's session count, and the
-- organization's started total): one trigger call per create.
CREATE OR REPLACE FUNCTION executions_count_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE sessions SET executions_count = executions_count + 1 WHERE id = NEW.session_id;
  IF NEW.ended_at IS NULL THEN
    UPDATE orgs SET executions_started = executions_started + 1 WHERE id = NEW.org_id;
  END IF;
  RETURN NULL;
END
$$;

-- An execution leaves the running set: it ended (ended_at set), or was deleted unfinished (a
-- session or an organization removed by cascade). Counted on this connection's row.
CREATE FUNCTION executions_running_left() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_org uuid;
  v_delta integer := 1;
BEGIN
  IF TG_OP = 'DELETE' THEN
    v_org := OLD.org_id;
  ELSE
    v_org := NEW.org_id;
    -- ended_at is never cleared, but if it were, the execution would count as running again.
    IF NEW.ended_at IS NULL THEN
      v_delta := -1;
    END IF;
  END IF;
  INSERT INTO execution_ends AS c (org_id, backend, ended) VALUES (v_org, pg_backend_pid(), v_delta)
  ON CONFLICT (org_id, backend) DO UPDATE SET ended = c.ended + excluded.ended;
  RETURN NULL;
END
$$;

-- The WHEN conditions are evaluated without calling the function: a node step's update, which
-- leaves ended_at alone, costs nothing here.
CREATE TRIGGER executions_running_ended AFTER UPDATE OF ended_at ON executions
  FOR EACH ROW WHEN ((OLD.ended_at IS NULL) IS DISTINCT FROM (NEW.ended_at IS NULL))
  EXECUTE FUNCTION executions_running_left();

CREATE TRIGGER executions_running_deleted AFTER DELETE ON executions
  FOR EACH ROW WHEN (OLD.ended_at IS NULL)
  EXECUTE FUNCTION executions_running_left();

-- Folds the rows of closed connections into each organization's row 0 and drops the rows of
-- organizations that are gone; returns how many rows it removed. Only this function writes
-- row 0, and a caller serialises it (the recovery sweep's advisory lock). It never waits: a row
-- an end is writing right now (its connection id recycled by a new connection) is skipped until
-- the next call, so it cannot deadlock with ends either.
CREATE FUNCTION compact_execution_ends() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_removed integer;
BEGIN
  WITH stale AS (
    SELECT c.org_id, c.backend FROM execution_ends c
     WHERE (c.backend <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.backend))
        OR NOT EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id)
     ORDER BY c.org_id, c.backend
       FOR UPDATE SKIP LOCKED),
  gone AS (
    DELETE FROM execution_ends c USING stale
     WHERE c.org_id = stale.org_id AND c.backend = stale.backend
    RETURNING c.org_id, c.ended),
  folded AS (
    INSERT INTO execution_ends AS c (org_id, backend, ended)
    SELECT g.org_id, 0, sum(g.ended) FROM gone g
     WHERE EXISTS (SELECT 1 FROM orgs o WHERE o.id = g.org_id)
     GROUP BY g.org_id ORDER BY g.org_id
    ON CONFLICT (org_id, backend) DO UPDATE SET ended = c.ended + excluded.ended
    RETURNING 1)
  SELECT count(*) INTO v_removed FROM gone;
  RETURN v_removed;
END
$$;

CREATE OR REPLACE FUNCTION create_execution(
  p_revision_id uuid,
  p_org_id uuid,
  p_blob_id uuid,
  p_session_id uuid,
  p_session_alias text,
  p_definition_id uuid,
  p_definition_alias text,
  p_input jsonb,
  p_input_bytes integer,
  -- Catalog entries: the input ceiling, the two quotas, and the run limits stored with the execution.
  p_input_spec jsonb,
  p_org_spec jsonb,
  p_session_spec jsonb,
  p_run_specs jsonb,
  p_channel text,
  OUT refusal text,
  OUT refused_limit jsonb,
  OUT held integer,
  OUT id uuid,
  OUT session_id uuid,
  OUT definition_id uuid,
  OUT status text,
  OUT input_data jsonb,
  OUT output jsonb,
  OUT error jsonb,
  OUT limits jsonb,
  OUT node_runs integer,
  OUT created_at timestamptz,
  OUT started_at timestamptz,
  OUT ended_at timestamptz
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_session uuid;
  v_session_status text;
  v_definition uuid;
  v_graph jsonb;
  v_owner uuid;
  v_chain_org uuid;
  v_overrides jsonb;
  v_limit jsonb;
  v_event bigint;
BEGIN
  -- Read without a lock: a delete committing after this read leaves an execution in a session
  -- that is going away, and the session's removal takes it (and frees its slots) by cascade.
  IF p_session_id IS NOT NULL THEN
    SELECT s.id, s.status INTO v_session, v_session_status FROM sessions s
     WHERE s.revision_id = p_revision_id AND s.id = p_session_id;
  ELSE
    SELECT s.id, s.status INTO v_session, v_session_status FROM sessions s
     WHERE s.revision_id = p_revision_id AND s.alias = p_session_alias;
  END IF;
  IF v_session IS NULL THEN
    refusal := 'session_not_found';
    RETURN;
  END IF;
  IF v_session_status <> 'active' THEN
    refusal := 'session_deleting';
    RETURN;
  END IF;

  IF p_definition_id IS NOT NULL THEN
    SELECT d.id, d.graph INTO v_definition, v_graph FROM definitions d
     WHERE d.revision_id = p_revision_id AND d.id = p_definition_id;
  ELSE
    SELECT d.id, d.graph INTO v_definition, v_graph FROM definitions d
     WHERE d.revision_id = p_revision_id AND d.alias = p_definition_alias;
  END IF;
  IF v_definition IS NULL THEN
    refusal := 'definition_not_found';
    RETURN;
  END IF;

  -- The overrides of the blob's ownership chain as read now (loadOverrides for a blob target):
  -- the blob's, its organization's and that organization's current owner's.
  SELECT b.org_id, o.owner_id INTO v_chain_org, v_owner
    FROM blobs b JOIN orgs o ON o.id = b.org_id WHERE b.id = p_blob_id;
  SELECT jsonb_build_object(
           'user', coalesce(jsonb_object_agg(ov.limit_id, ov.value) FILTER (WHERE ov.target_type = 'user'), '{}'),
           'org', coalesce(jsonb_object_agg(ov.limit_id, ov.value) FILTER (WHERE ov.target_type = 'org'), '{}'),
           'blob', coalesce(jsonb_object_agg(ov.limit_id, ov.value) FILTER (WHERE ov.target_type = 'blob'), '{}'))
    INTO v_overrides
    FROM (VALUES ('user', v_owner), ('org', v_chain_org), ('blob', p_blob_id)) AS l (target_type, target_id)
    JOIN limit_overrides ov ON ov.target_type = l.target_type AND ov.target_id = l.target_id;

  v_limit := resolve_limit(p_input_spec, v_overrides);
  IF p_input_bytes > (v_limit->'value')::numeric THEN
    refusal := 'limit';
    refused_limit := v_limit || jsonb_build_object('id', p_input_spec->'id');
    RETURN;
  END IF;

  -- Organization before session: the order in which deleting an organization locks them too.
  -- The holder row lock serialises the takers of one holder (as takeSlot does); the count is its
  -- own statement, so in READ COMMITTED it runs on a snapshot taken after the lock was granted and
  -- sees every execution the previous holder of the lock committed, and every end committed by then.
  v_limit := resolve_limit(p_org_spec, v_overrides);
  PERFORM 1 FROM orgs o WHERE o.id = p_org_id FOR NO KEY UPDATE;
  SELECT org_running_executions(p_org_id) INTO held;
  IF jsonb_typeof(v_limit->'value') = 'number' AND held >= (v_limit->'value')::numeric THEN
    refusal := 'limit';
    refused_limit := v_limit || jsonb_build_object('id', p_org_spec->'id');
    RETURN;
  END IF;

  -- The session's count, read under its row lock: SELECT … FOR NO KEY UPDATE returns the row as
  -- the previous holder of the lock committed it, so this is the count after its insert.
  v_limit := resolve_limit(p_session_spec, v_overrides);
  SELECT s.executions_count INTO held FROM sessions s WHERE s.id = v_session FOR NO KEY UPDATE;
  IF jsonb_typeof(v_limit->'value') = 'number' AND held >= (v_limit->'value')::numeric THEN
    refusal := 'limit';
    refused_limit := v_limit || jsonb_build_object('id', p_session_spec->'id');
    RETURN;
  END IF;
  held := NULL;

  -- Queued, its state already naming the start node and its input, so the first runner to claim
  -- it starts there like any resumption. The graph is copied: it runs even if the definition goes.
  INSERT INTO executions AS e (session_id, org_id, blob_id, revision_id, definition_id, graph, input_data, limits, state)
  VALUES (v_session, p_org_id, p_blob_id, p_revision_id, v_definition, v_graph, p_input,
          (SELECT jsonb_object_agg(r.spec->>'id', resolve_limit(r.spec, v_overrides)->'value')
             FROM jsonb_array_elements(p_run_specs) AS r (spec)),
          jsonb_build_object('node', v_graph->'start', 'input', p_input))
  RETURNING e.id, e.session_id, e.definition_id, e.status, e.input_data, e.output, e.error, e.limits,
            e.node_runs, e.created_at, e.started_at, e.ended_at
       INTO id, session_id, definition_id, status, input_data, output, error, limits,
            node_runs, created_at, started_at, ended_at;

  -- appendSessionEvent's row and announcement (shared/events/store.ts): NOTIFY is delivered only
  -- if the transaction commits, so a subscriber never hears of a rolled-back execution.
  INSERT INTO session_events AS ev (session_id, execution_id, kind, attributes)
  VALUES (v_session, id, 'execution.created', jsonb_build_object('execution_id', id, 'definition_id', v_definition))
  RETURNING ev.id INTO v_event;
  PERFORM pg_notify(p_channel, 'session:' || v_session || ':' || v_event);
END
$$;
