-- What a session's graph holds: its elements and their bytes as stored text, kept as
-- revision_usage (027) keeps a graph blob revision's, by statement-level triggers in the writing
-- transaction. Every writer of a session graph holds the session row's lock
-- (lockSessionForGraph), so the count a writer reads before and after its mutations is its own.
-- The bound it is checked against is configuration (GRAPH_ELEMENTS_PER_SESSION,
-- GRAPH_BYTES_PER_SESSION; shared/graph/stored-bounds.ts).
CREATE TABLE session_graph_usage (
  session_id    uuid PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
  elements      bigint NOT NULL DEFAULT 0,
  element_bytes bigint NOT NULL DEFAULT 0
);

INSERT INTO session_graph_usage (session_id, elements, element_bytes)
SELECT session_id, count(*), sum(octet_length(id) + octet_length(label) + octet_length(properties::text))
  FROM graph_elements GROUP BY session_id;

CREATE FUNCTION session_graph_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO session_graph_usage AS u (session_id, elements, element_bytes)
    SELECT session_id, count(*), sum(octet_length(id) + octet_length(label) + octet_length(properties::text))
      FROM added GROUP BY session_id
    ON CONFLICT (session_id) DO UPDATE
       SET elements = u.elements + EXCLUDED.elements, element_bytes = u.element_bytes + EXCLUDED.element_bytes;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE session_graph_usage AS u
       SET elements = u.elements - r.n, element_bytes = u.element_bytes - r.bytes
      FROM (SELECT session_id, count(*) AS n,
                   sum(octet_length(id) + octet_length(label) + octet_length(properties::text)) AS bytes
              FROM removed GROUP BY session_id) AS r
     WHERE u.session_id = r.session_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER session_graph_usage_insert AFTER INSERT ON graph_elements
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION session_graph_usage();
CREATE TRIGGER session_graph_usage_update AFTER UPDATE ON graph_elements
  REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION session_graph_usage();
CREATE TRIGGER session_graph_usage_delete AFTER DELETE ON graph_elements
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION session_graph_usage();
