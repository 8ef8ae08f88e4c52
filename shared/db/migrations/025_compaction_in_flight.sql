-- The recovery sweep's compaction (migration 015) read every row of execution_ends and looked each
-- organization up, every 5 s on every runner: with an organization's row 0 kept for good, that is
-- a pass over every organization that ever ended an execution (8–24 ms at 10,000 of them), growing
-- with the tenants rather than with the work. It now reads only the rows of connections (backend
-- <> 0), through a partial index: those are written by ends since the last compaction, so the
-- pass is proportional to the work in flight. An organization's row 0 goes with it: a trigger on
-- orgs removes its rows at its deletion. The ends its cascade counts may come after that trigger;
-- they are rows of a connection, which compaction drops once the organization is gone.
CREATE INDEX execution_ends_connections_idx ON execution_ends (backend) WHERE backend <> 0;

CREATE FUNCTION execution_ends_org_removed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM execution_ends WHERE org_id = OLD.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER execution_ends_org_removed AFTER DELETE ON orgs
  FOR EACH ROW EXECUTE FUNCTION execution_ends_org_removed();

-- Rows of organizations deleted before this migration: row 0 was dropped by the next compaction,
-- which no longer looks at it.
DELETE FROM execution_ends c WHERE NOT EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id);

CREATE OR REPLACE FUNCTION compact_execution_ends() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_removed integer;
BEGIN
  WITH stale AS (
    SELECT c.org_id, c.backend FROM execution_ends c
     WHERE c.backend <> 0
       AND (NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.backend)
            OR NOT EXISTS (SELECT 1 FROM orgs o WHERE o.id = c.org_id))
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
