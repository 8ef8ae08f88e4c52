-- What one account may keep stored beyond the limits catalog (docs/operations.md, "What one
-- tenant can do to the others"): stored idempotent answers per account, NLP records and graph
-- elements per revision. Each count changes in the transaction of the rows it counts — by these
-- triggers, or (a stored answer taken) by the statement that checks it — so two concurrent writers
-- can never both pass a bound: the second waits on the count's row and sees the first's.

-- Stored answers: the account whose request stored each one (NULL for rows older than this
-- migration, which are not counted and expire within a day).
ALTER TABLE idempotency_keys ADD COLUMN account uuid;
-- The purge of an account's expired answers when its count is full.
CREATE INDEX idempotency_keys_account_idx ON idempotency_keys (account, created_at) WHERE account IS NOT NULL;

CREATE TABLE idempotency_usage (
  account uuid PRIMARY KEY,
  answers bigint NOT NULL DEFAULT 0,
  bytes   bigint NOT NULL DEFAULT 0
);

-- Taken by the storing transaction (control-plane/sql/idempotency-usage.ts); freed here when an
-- answer goes: its row deleted (retention, purge) or taken over by a new claim (response cleared).
CREATE FUNCTION idempotency_usage_free() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.account IS NOT NULL AND OLD.response IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.response IS NULL) THEN
    UPDATE idempotency_usage SET answers = answers - 1, bytes = bytes - octet_length(OLD.response)
     WHERE account = OLD.account;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER idempotency_usage_free AFTER UPDATE OF response OR DELETE ON idempotency_keys
  FOR EACH ROW EXECUTE FUNCTION idempotency_usage_free();

-- What a revision of an NLP dataset or a graph blob holds: records and elements, and their bytes
-- as stored text. One row per revision, made by the first write; gone with the revision.
CREATE TABLE revision_usage (
  revision_id   uuid PRIMARY KEY REFERENCES revisions (id) ON DELETE CASCADE,
  records       bigint NOT NULL DEFAULT 0,
  record_bytes  bigint NOT NULL DEFAULT 0,
  elements      bigint NOT NULL DEFAULT 0,
  element_bytes bigint NOT NULL DEFAULT 0
);

INSERT INTO revision_usage (revision_id, records, record_bytes)
SELECT revision_id, count(*),
       sum(octet_length(text) + octet_length(labels::text) + coalesce(octet_length(meta::text), 0))
  FROM nlp_records GROUP BY revision_id;
INSERT INTO revision_usage AS u (revision_id, elements, element_bytes)
SELECT revision_id, count(*), sum(octet_length(id) + octet_length(label) + octet_length(properties::text))
  FROM revision_graph_elements GROUP BY revision_id
ON CONFLICT (revision_id) DO UPDATE SET elements = EXCLUDED.elements, element_bytes = EXCLUDED.element_bytes;

-- Statement-level, over the transition tables: an upload of 10,000 records updates its
-- revision's row once, not 10,000 times.
CREATE FUNCTION nlp_records_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO revision_usage AS u (revision_id, records, record_bytes)
  SELECT revision_id, count(*),
         sum(octet_length(text) + octet_length(labels::text) + coalesce(octet_length(meta::text), 0))
    FROM added GROUP BY revision_id
  ON CONFLICT (revision_id) DO UPDATE
     SET records = u.records + EXCLUDED.records, record_bytes = u.record_bytes + EXCLUDED.record_bytes;
  RETURN NULL;
END $$;
CREATE TRIGGER nlp_records_usage AFTER INSERT ON nlp_records
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION nlp_records_usage();

-- Graph elements are inserted, replaced (upserts) and deleted: each statement adds what it added
-- and takes off what it removed.
CREATE FUNCTION revision_graph_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO revision_usage AS u (revision_id, elements, element_bytes)
    SELECT revision_id, count(*), sum(octet_length(id) + octet_length(label) + octet_length(properties::text))
      FROM added GROUP BY revision_id
    ON CONFLICT (revision_id) DO UPDATE
       SET elements = u.elements + EXCLUDED.elements, element_bytes = u.element_bytes + EXCLUDED.element_bytes;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE revision_usage AS u
       SET elements = u.elements - r.n, element_bytes = u.element_bytes - r.bytes
      FROM (SELECT revision_id, count(*) AS n,
                   sum(octet_length(id) + octet_length(label) + octet_length(properties::text)) AS bytes
              FROM removed GROUP BY revision_id) AS r
     WHERE u.revision_id = r.revision_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER revision_graph_usage_insert AFTER INSERT ON revision_graph_elements
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION revision_graph_usage();
CREATE TRIGGER revision_graph_usage_update AFTER UPDATE ON revision_graph_elements
  REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION revision_graph_usage();
CREATE TRIGGER revision_graph_usage_delete AFTER DELETE ON revision_graph_elements
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION revision_graph_usage();
