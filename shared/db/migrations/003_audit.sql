-- The audit log: every perimeter operation (who may access what) and every request made with an
-- acting token, whatever its outcome. Rows name accounts by id without foreign keys, so the trail
-- outlives the accounts, keys and targets it mentions (a retired service account's history stays).

CREATE TABLE audit_log (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  request_id  text NOT NULL,
  -- The account the request acted as, and the human behind it (null: a service account's own key).
  actor_id    uuid NOT NULL,
  human_id    uuid,
  credential  text NOT NULL CHECK (credential IN ('bearer', 'acting', 'api_key')),
  api_key_id  uuid,
  operation   text NOT NULL,
  method      text NOT NULL,
  route       text NOT NULL,
  target_type text,
  target_id   text,
  outcome     text NOT NULL CHECK (outcome IN ('allowed', 'refused')),
  -- The envelope's `error` code and the HTTP status when the request was refused.
  error       text,
  status      integer NOT NULL,
  CHECK ((outcome = 'refused') = (error IS NOT NULL))
);
CREATE INDEX audit_log_actor_idx ON audit_log (actor_id, id DESC);
CREATE INDEX audit_log_human_idx ON audit_log (human_id, id DESC) WHERE human_id IS NOT NULL;
CREATE INDEX audit_log_at_idx ON audit_log (at);
