-- create_execution in one round trip (control-plane/sql/executions.ts calls it inside the command's
-- transaction, then sends the pg-boss job on the same transaction and commits). Each statement it
-- ran from the control plane cost a round trip, client CPU and backend CPU; this does the reads,
-- the refusals, both quota slots, the row and the session event in one call, with plans cached for
-- the connection's life.
--
-- The catalog is not copied here: the caller passes the entries it needs (shared/limits/catalog.ts
-- stays the only place a default, a most permissive value or a Set-on list is written), and
-- resolve_limit applies the rules of resolveLimit/validateOverride (shared/limits/resolve.ts,
-- overrides.ts) to them. test/limits/resolve-sql.test.ts pins the two to the same answers.

-- True when `value` has the type `spec`'s limit takes (validateOverride's typeProblem).
CREATE FUNCTION limit_value_has_type(spec jsonb, value jsonb) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  kind text := spec->>'kind';
BEGIN
  IF kind = 'retention' AND jsonb_typeof(value) = 'null' THEN
    RETURN true;
  END IF;
  IF kind IN ('quota', 'ceiling', 'retention') THEN
    -- Number.isSafeInteger(value) && value >= 0.
    RETURN jsonb_typeof(value) = 'number'
       AND value::numeric = trunc(value::numeric)
       AND value::numeric BETWEEN 0 AND 9007199254740991;
  END IF;
  IF spec->>'unit' = 'flag' THEN
    RETURN jsonb_typeof(value) = 'boolean';
  END IF;
  -- A list of npm package names (MODULE_NAME_RE, at most 214 characters), without duplicates.
  IF jsonb_typeof(value) <> 'array' THEN
    RETURN false;
  END IF;
  RETURN NOT EXISTS (
           SELECT 1 FROM jsonb_array_elements(value) AS n (name)
            WHERE jsonb_typeof(n.name) <> 'string'
               OR char_length(n.name #>> '{}') > 214
               OR (n.name #>> '{}') !~ '^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$')
     AND (SELECT count(DISTINCT n.name) FROM jsonb_array_elements(value) AS n (name)) = jsonb_array_length(value);
END
$$;

-- The value in force of the limit `spec` (a catalog entry as JSON) under `overrides`
-- ({user, org, blob}: limit id -> stored value), as {value, source}: the nearest override that
-- passes validation, clamped to the most permissive value when past it, else the default.
CREATE FUNCTION resolve_limit(spec jsonb, overrides jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  id text := spec->>'id';
  level text;
  value jsonb;
  bound numeric;
BEGIN
  FOREACH level IN ARRAY ARRAY['blob', 'org', 'user'] LOOP
    value := overrides->level->id;
    -- Absent, fixed, not settable on this level, or of the wrong type: skipped, as if absent.
    CONTINUE WHEN value IS NULL OR NOT (spec->'set_on' ? level) OR NOT limit_value_has_type(spec, value);
    IF jsonb_typeof(spec->'most_permissive') = 'number' AND jsonb_typeof(value) = 'number' THEN
      bound := (spec->'most_permissive')::numeric;
      IF (spec->>'more_permissive' = 'lower' AND value::numeric < bound)
         OR (spec->>'more_permissive' IS DISTINCT FROM 'lower' AND value::numeric > bound) THEN
        RETURN jsonb_build_object('value', spec->'most_permissive', 'source', level);
      END IF;
    END IF;
    RETURN jsonb_build_object('value', value, 'source', level);
  END LOOP;
  RETURN jsonb_build_object('value', spec->'default', 'source', 'default');
END
$$;

-- One create_execution. Exactly one of each id/alias pair is given. On a refusal nothing is
-- written and `refusal` says which: `session_not_found`, `session_deleting`,
-- `definition_not_found`, or `limit` with `refused_limit` ({id, value, source}: the limit in
-- force) and `held` (null for a ceiling); the caller rolls back (the holder locks taken so far go with it). Otherwise `refusal`
-- is null and the other columns are the new execution's record.
CREATE FUNCTION create_execution(
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

  v_limit := resolve_limit(p_session_spec, v_overrides);
  PERFORM 1 FROM sessions s WHERE s.id = v_session FOR NO KEY UPDATE;
  SELECT count(*)::int INTO held FROM executions e WHERE e.session_id = v_session;
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
