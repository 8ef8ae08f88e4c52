-- Webhooks in and out (docs/webhooks.md).

-- A trigger starts executions of one definition in one session when a signed request arrives at
-- POST /v1/hooks/:id. Its id is drawn by the control plane from a random UUID (122 random bits),
-- never the time-ordered default: the id is the URL, and must not be guessable. The signing
-- secret is sealed like a credential's (shared/crypto/credential-cipher.ts, the id as associated
-- data). `acting_as` is the account that last set the secret: each request runs with its standing.
CREATE TABLE triggers (
  id            uuid PRIMARY KEY,
  revision_id   uuid NOT NULL REFERENCES revisions (id) ON DELETE CASCADE,
  session_id    uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  definition_id uuid NOT NULL REFERENCES definitions (id) ON DELETE CASCADE,
  -- The session's blob and organization: the limits and the holder of the running executions.
  blob_id       uuid NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
  org_id        uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  iv            bytea NOT NULL,
  auth_tag      bytea NOT NULL,
  ciphertext    bytea NOT NULL,
  created_by    uuid NOT NULL,
  acting_as     uuid NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  secret_set_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX triggers_listing_idx ON triggers (session_id, created_at DESC, id DESC);

-- The messages a trigger accepted, by their `webhook-id`, for the replay window: the same message
-- again answers the execution it made instead of making another. Rows older than the window are
-- removed as new ones arrive for the trigger.
CREATE TABLE trigger_receipts (
  trigger_id   uuid NOT NULL REFERENCES triggers (id) ON DELETE CASCADE,
  message_id   text NOT NULL,
  execution_id uuid NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (trigger_id, message_id)
);
CREATE INDEX trigger_receipts_age_idx ON trigger_receipts (trigger_id, received_at);

-- An event hook posts the ends of a session's executions to a URL, signed with its own secret.
CREATE TABLE event_hooks (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  revision_id uuid NOT NULL REFERENCES revisions (id) ON DELETE CASCADE,
  session_id  uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  org_id      uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  url         text NOT NULL,
  events      text[] NOT NULL,
  iv          bytea NOT NULL,
  auth_tag    bytea NOT NULL,
  ciphertext  bytea NOT NULL,
  created_by  uuid NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_hooks_listing_idx ON event_hooks (session_id, created_at DESC, id DESC);

-- One message to one hook (its id is the `webhook-id` header, the same on every attempt), tried
-- until delivered or a day old. `next_attempt_at` is also the lease of a runner posting it: a
-- claim moves it past the attempt's time bound, so a runner that dies mid-attempt leaves it to be
-- tried again (at least once).
CREATE TABLE hook_deliveries (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  hook_id         uuid NOT NULL REFERENCES event_hooks (id) ON DELETE CASCADE,
  org_id          uuid NOT NULL,
  execution_id    uuid NOT NULL,
  event           text NOT NULL,
  payload         jsonb NOT NULL,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  created_at      timestamptz NOT NULL DEFAULT now(),
  ended_at        timestamptz
);
-- Claims walk the organizations with pending deliveries, then each one's earliest due.
CREATE INDEX hook_deliveries_due_idx ON hook_deliveries (org_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX hook_deliveries_hook_idx ON hook_deliveries (hook_id);
CREATE INDEX hook_deliveries_ended_idx ON hook_deliveries (ended_at) WHERE ended_at IS NOT NULL;

-- Every attempt of a delivery, as list_event_hook_attempts shows it.
CREATE TABLE hook_attempts (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  delivery_id  uuid NOT NULL REFERENCES hook_deliveries (id) ON DELETE CASCADE,
  hook_id      uuid NOT NULL REFERENCES event_hooks (id) ON DELETE CASCADE,
  execution_id uuid NOT NULL,
  event        text NOT NULL,
  attempt      integer NOT NULL,
  outcome      text NOT NULL CHECK (outcome IN ('delivered', 'retrying', 'failed')),
  status_code  integer,
  error        text,
  duration_ms  integer NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX hook_attempts_listing_idx ON hook_attempts (hook_id, created_at DESC, id DESC);
CREATE INDEX hook_attempts_delivery_idx ON hook_attempts (delivery_id);

-- An execution's end makes one delivery per hook of its session subscribed to that end, in the
-- statement that ends it: every path that ends an execution (a runner, cancel_execution, a limit)
-- sets ended_at, and the delivery commits or rolls back with the end. The payload is taken now, so
-- a delivery outlives the execution's retention.
CREATE FUNCTION hook_deliveries_on_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO hook_deliveries (hook_id, org_id, execution_id, event, payload)
  SELECT h.id, h.org_id, NEW.id, 'execution.' || NEW.status,
         jsonb_build_object(
           'type', 'execution.' || NEW.status,
           'timestamp', to_char(NEW.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'data', jsonb_build_object('execution', jsonb_build_object(
             'id', NEW.id,
             'revision_id', h.revision_id,
             'session_id', NEW.session_id,
             'definition_id', NEW.definition_id,
             'status', NEW.status,
             -- An output past 64 KiB is left out (the receiver reads it with get_execution):
             -- a delivery's size, and each hook's copy of it, stays bounded.
             'output', CASE WHEN octet_length(NEW.output::text) > 65536 THEN NULL ELSE NEW.output END,
             'output_omitted', COALESCE(octet_length(NEW.output::text) > 65536, false),
             'error', NEW.error,
             'created_at', to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'started_at', to_char(NEW.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'ended_at', to_char(NEW.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))))
    FROM event_hooks h
   WHERE h.session_id = NEW.session_id AND ('execution.' || NEW.status) = ANY (h.events);
  RETURN NULL;
END
$$;
CREATE TRIGGER executions_hook_deliveries AFTER UPDATE OF ended_at ON executions
  FOR EACH ROW WHEN (OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL)
  EXECUTE FUNCTION hook_deliveries_on_end();
