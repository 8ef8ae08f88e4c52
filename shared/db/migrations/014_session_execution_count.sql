-- workflow.executions_per_session was counted at every create with count(*) over the session's
-- executions: work in proportion to the session's history, and the largest statement of a create
-- once sessions hold a few hundred executions (docs/benchmarks.md). The count now lives on the
-- session row, changed by triggers in the statement that inserts or deletes the executions, so it
-- cannot drift from the rows: a create (under the session's row lock) adds one, the retention
-- sweep's deletes subtract theirs, and deleting a session or an organization takes the row away.
ALTER TABLE sessions ADD COLUMN executions_count integer NOT NULL DEFAULT 0;

UPDATE sessions s SET executions_count = c.n
  FROM (SELECT session_id, count(*)::int AS n FROM executions GROUP BY session_id) AS c
 WHERE s.id = c.session_id;

-- One row at a time: every insert is a create, which already holds the session's row lock.
CREATE FUNCTION executions_count_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE sessions SET executions_count = executions_count + 1 WHERE id = NEW.session_id;
  RETURN NULL;
END
$$;

CREATE TRIGGER executions_count_insert AFTER INSERT ON executions
  FOR EACH ROW EXECUTE FUNCTION executions_count_insert();

-- Once per statement: a retention batch deletes many executions of many sessions. The sessions
-- are locked in id order first, so two such statements, or one and a create, cannot deadlock.
-- A session deleted in the same transaction (cascade) is simply not found.
CREATE FUNCTION executions_count_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM sessions s WHERE s.id IN (SELECT DISTINCT r.session_id FROM removed r) ORDER BY s.id FOR NO KEY UPDATE;
  UPDATE sessions s SET executions_count = s.executions_count - g.n
    FROM (SELECT r.session_id, count(*)::int AS n FROM removed r GROUP BY r.session_id) AS g
   WHERE s.id = g.session_id;
  RETURN NULL;
END
$$;

CREATE TRIGGER executions_count_delete AFTER DELETE ON executions
  REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION executions_count_delete();

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
  -- sees every execution the previous holder of the lock committed.
  v_limit := resolve_limit(p_org_spec, v_overrides);
  PERFORM 1 FROM orgs o WHERE o.id = p_org_id FOR NO KEY UPDATE;
  SELECT count(*)::int INTO held FROM executions e WHERE e.org_id = p_org_id AND e.ended_at IS NULL;
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
