-- Re-runs (docs/executions.md, "rerun_execution"): a new execution in the same session that runs
-- the original's graph from one of its nodes. The two rows are linked both ways: `rerun_of` on the
-- re-run, `rerun_by` (the newest re-run) on the original. Either side may be removed by retention
-- or with its session first; the link on the other side is then cleared, never left dangling.
ALTER TABLE executions
  ADD COLUMN rerun_of uuid REFERENCES executions (id) ON DELETE SET NULL,
  ADD COLUMN rerun_by uuid REFERENCES executions (id) ON DELETE SET NULL;
-- The foreign keys' lookups when an execution is removed: without them each removal would scan
-- the table. Partial: almost every execution is no re-run and has none.
CREATE INDEX executions_rerun_of_idx ON executions (rerun_of) WHERE rerun_of IS NOT NULL;
CREATE INDEX executions_rerun_by_idx ON executions (rerun_by) WHERE rerun_by IS NOT NULL;

-- The limits of a create, shared by create_execution and rerun_execution so that both refuse in
-- the same order under the same locks: the input ceiling, then `running_executions_per_org` under
-- the organization's row lock, then `executions_per_session` under the session's. Answers the
-- refusal, or the run limits to store with the new execution (refusal null).
CREATE FUNCTION execution_slots(
  p_org_id uuid,
  p_blob_id uuid,
  p_session uuid,
  p_input_bytes integer,
  p_input_spec jsonb,
  p_org_spec jsonb,
  p_session_spec jsonb,
  p_run_specs jsonb,
  OUT refusal text,
  OUT refused_limit jsonb,
  OUT held integer,
  OUT run_limits jsonb
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_owner uuid;
  v_chain_org uuid;
  v_overrides jsonb;
  v_limit jsonb;
BEGIN
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
  SELECT s.executions_count INTO held FROM sessions s WHERE s.id = p_session FOR NO KEY UPDATE;
  IF jsonb_typeof(v_limit->'value') = 'number' AND held >= (v_limit->'value')::numeric THEN
    refusal := 'limit';
    refused_limit := v_limit || jsonb_build_object('id', p_session_spec->'id');
    RETURN;
  END IF;
  held := NULL;
  run_limits := (SELECT jsonb_object_agg(r.spec->>'id', resolve_limit(r.spec, v_overrides)->'value')
                   FROM jsonb_array_elements(p_run_specs) AS r (spec));
END
$$;

-- create_execution as in migration 015, its limits taken by execution_slots.
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
  v_run_limits jsonb;
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

  SELECT x.refusal, x.refused_limit, x.held, x.run_limits INTO refusal, refused_limit, held, v_run_limits
    FROM execution_slots(p_org_id, p_blob_id, v_session, p_input_bytes, p_input_spec, p_org_spec, p_session_spec, p_run_specs) AS x;
  IF refusal IS NOT NULL THEN
    RETURN;
  END IF;

  -- Queued, its state already naming the start node and its input, so the first runner to claim
  -- it starts there like any resumption. The graph is copied: it runs even if the definition goes.
  INSERT INTO executions AS e (session_id, org_id, blob_id, revision_id, definition_id, graph, input_data, limits, state)
  VALUES (v_session, p_org_id, p_blob_id, p_revision_id, v_definition, v_graph, p_input, v_run_limits,
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

-- A re-run of `p_original` (an ended execution of a session of `p_revision_id`, already read and
-- checked by the caller, which chose the node and the input): the session must still be active,
-- the limits of a create apply (execution_slots), and the new row runs the original's copy of the
-- graph from `p_node` with `p_input` (so deleting the definition never stops a re-run). The
-- original is locked while its `rerun_by` is set, so concurrent re-runs of one execution queue.
CREATE FUNCTION rerun_execution(
  p_original uuid,
  p_revision_id uuid,
  p_org_id uuid,
  p_blob_id uuid,
  p_node text,
  p_input jsonb,
  p_input_bytes integer,
  p_input_spec jsonb,
  p_org_spec jsonb,
  p_session_spec jsonb,
  p_run_specs jsonb,
  p_channel text,
  OUT refusal text,
  OUT refused_limit jsonb,
  OUT held integer,
  OUT id uuid
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_session uuid;
  v_session_status text;
  v_original executions%ROWTYPE;
  v_id uuid;
  v_run_limits jsonb;
  v_event bigint;
BEGIN
  SELECT e.* INTO v_original FROM executions e JOIN sessions s ON s.id = e.session_id
   WHERE e.id = p_original AND s.revision_id = p_revision_id;
  IF v_original.id IS NULL THEN
    refusal := 'execution_not_found';
    RETURN;
  END IF;
  SELECT s.id, s.status INTO v_session, v_session_status FROM sessions s WHERE s.id = v_original.session_id;
  IF v_session_status <> 'active' THEN
    refusal := 'session_deleting';
    RETURN;
  END IF;

  SELECT x.refusal, x.refused_limit, x.held, x.run_limits INTO refusal, refused_limit, held, v_run_limits
    FROM execution_slots(p_org_id, p_blob_id, v_session, p_input_bytes, p_input_spec, p_org_spec, p_session_spec, p_run_specs) AS x;
  IF refusal IS NOT NULL THEN
    RETURN;
  END IF;

  INSERT INTO executions AS e (session_id, org_id, blob_id, revision_id, definition_id, graph, input_data, limits, state, rerun_of)
  VALUES (v_session, p_org_id, p_blob_id, p_revision_id, v_original.definition_id, v_original.graph, p_input, v_run_limits,
          jsonb_build_object('node', p_node, 'input', p_input), p_original)
  RETURNING e.id INTO v_id;
  id := v_id;
  UPDATE executions e SET rerun_by = v_id WHERE e.id = p_original;

  INSERT INTO session_events AS ev (session_id, execution_id, kind, attributes)
  VALUES (v_session, v_id, 'execution.created',
          jsonb_build_object('execution_id', v_id, 'definition_id', v_original.definition_id, 'rerun_of', p_original, 'node', p_node))
  RETURNING ev.id INTO v_event;
  PERFORM pg_notify(p_channel, 'session:' || v_session || ':' || v_event);
END
$$;
