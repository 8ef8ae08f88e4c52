-- Safe retries: a creating route or command sent with an idempotency key
-- (`Idempotency-Key` over REST, `idempotency_key` over JSON-RPC) stores its answer here, in the
-- transaction that creates. The row is inserted first in that transaction, so the primary key
-- makes a concurrent duplicate wait for the first request's commit (then it finds the answer) or
-- rollback (then it claims the key itself): two requests with one key never both create.
--
-- A key is the caller's (`caller`: the user and the credential kind, or the API key), never
-- shared between callers. `fingerprint` is an HMAC of the operation, its target and its parsed
-- params: the same key with another fingerprint is 409 `conflict`. The answer is sealed with
-- CREDENTIAL_KEY (an API key's mint answer holds its secret). Keys live 24 hours: an older row is
-- ignored and overwritten by the next claim, and the retention sweep removes it. No foreign key
-- to users: the claim would lock the account's row on every keyed create, and a deleted
-- account's keys can never be presented again; the sweep removes them with the rest.
CREATE TABLE idempotency_keys (
  caller      text NOT NULL,
  key         text NOT NULL,
  -- `POST /v1/orgs`, `create_execution`…: shown in the 409 of a key reused elsewhere.
  operation   text NOT NULL,
  fingerprint bytea NOT NULL,
  -- The stored answer: HTTP status and the sealed JSON body. NULL only inside the claiming
  -- transaction, which fills them before it commits, so no committed row lacks them.
  status      smallint,
  iv          bytea,
  auth_tag    bytea,
  response    bytea,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (caller, key),
  CHECK (length(key) BETWEEN 1 AND 255)
);
-- The retention sweep's scan: rows older than 24 hours, oldest first.
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

ALTER TABLE retention_sweeps ADD COLUMN idempotency_keys_removed bigint NOT NULL DEFAULT 0;
