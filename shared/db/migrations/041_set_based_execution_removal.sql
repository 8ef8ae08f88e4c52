-- A retention batch's cost per removed execution, without changing what it removes.
--
-- 1. The re-run links (migration 030) were foreign keys with ON DELETE SET NULL, which PostgreSQL
--    runs as two `UPDATE executions SET rerun_… = NULL WHERE rerun_… = $1` per removed execution
--    (a thousand statements per batch of 500, about a fifth of a batch's time). They are now
--    cleared by one statement per removing statement, joined to the removed rows, as migration 033
--    does for the execution events. The foreign keys' other half, the check at insert, is kept by
--    the only writer of the links, rerun_execution below, which locks the original as the check
--    did (a re-run's `rerun_by` is set in the transaction that inserts the re-run).
-- 2. A removal's per-session counts (migration 014) locked and updated the sessions by hash joins
--    that read every row of `sessions` twice per batch (the transition table has no statistics);
--    they now read the sessions they change through the primary key.
ALTER TABLE executions
  DROP CONSTRAINT executions_rerun_of_fkey,
  DROP CONSTRAINT executions_rerun_by_fkey;

CREATE FUNCTION executions_rerun_unlinked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- Through the partial indexes of migration 030: almost no execution is, or has, a re-run.
  UPDATE executions e SET rerun_of = NULL FROM removed r WHERE e.rerun_of = r.id;
  UPDATE executions e SET rerun_by = NULL FROM removed r WHERE e.rerun_by = r.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER executions_rerun_unlinked AFTER DELETE ON executions
  REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION executions_rerun_unlinked();

-- As in migration 014: the sessions are locked in id order first, so two such statements, or one
-- and a create, cannot deadlock; a session deleted in the same transaction is simply not found.
CREATE OR REPLACE FUNCTION executions_count_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_ids uuid[];
  v_counts int[];
BEGIN
  SELECT array_agg(g.session_id ORDER BY g.session_id), array_agg(g.n ORDER BY g.session_id)
    INTO v_ids, v_counts
    FROM (SELECT r.session_id, count(*)::int AS n FROM removed r GROUP BY r.session_id) AS g;
  PERFORM 1 FROM sessions s WHERE s.id = ANY (v_ids) ORDER BY s.id FOR NO KEY UPDATE;
  UPDATE sessions s SET executions_count = s.executions_count - u.n
    FROM unnest(v_ids, v_counts) AS u (id, n)
   WHERE s.id = u.id AND s.id = ANY (v_ids);
  RETURN NULL;
END
$$;

-- rerun_execution as in migration 030, the original locked as the foreign key's check locked it.
CREATE OR REPLACE FUNCTION rerun_execution(
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
  -- FOR KEY SHARE is the lock the foreign key's check took at the insert below, taken first: a
  -- removal of the original waits for this transaction (and its trigger then sees the re-run and
  -- clears the link), and an original removed first is not found. Taken before the session's and
  -- the organization's locks, in the order a retention batch takes them (executions, then sessions).
  SELECT e.* INTO v_original FROM executions e JOIN sessions s ON s.id = e.session_id
   WHERE e.id = p_original AND s.revision_id = p_revision_id
     FOR KEY SHARE OF e;
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
