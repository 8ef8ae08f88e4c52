-- Workflow revisions: definitions, sessions and their contents, executions and events.
-- Everything a session holds cascades from it, and a session from its revision.

CREATE TABLE definitions (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  alias       text,
  revision_id uuid NOT NULL REFERENCES revisions (id) ON DELETE CASCADE,
  category    text NOT NULL CHECK (category IN ('workflow', 'playground')),
  graph       jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT definitions_alias_key UNIQUE (revision_id, alias)
);
CREATE INDEX definitions_revision_idx ON definitions (revision_id, category);

CREATE TABLE sessions (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  alias       text,
  revision_id uuid NOT NULL REFERENCES revisions (id) ON DELETE CASCADE,
  status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deleting')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT sessions_alias_key UNIQUE (revision_id, alias)
);
-- Record-cursor listing: newest first within a revision.
CREATE INDEX sessions_listing_idx ON sessions (revision_id, created_at DESC, id DESC);
CREATE INDEX sessions_deleting_idx ON sessions (id) WHERE status = 'deleting';

-- Objects (JSON values) and files (bytes) share one alias namespace per session.
CREATE TABLE session_objects (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  session_id   uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  alias        text NOT NULL,
  kind         text NOT NULL CHECK (kind IN ('object', 'file')),
  value        jsonb,
  content      bytea,
  content_type text,
  size         integer NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT session_objects_alias_key UNIQUE (session_id, alias),
  CHECK ((kind = 'object') = (value IS NOT NULL) AND (kind = 'file') = (content IS NOT NULL))
);

CREATE TABLE thread_items (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  seq        bigint GENERATED ALWAYS AS IDENTITY,
  session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  thread     text NOT NULL,
  text       text,
  data       jsonb,
  files      text[] NOT NULL DEFAULT '{}',
  author_id  uuid,
  execution_id uuid,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX thread_items_listing_idx ON thread_items (session_id, thread, seq);

-- Graph elements: nodes and edges of one session's graph. Ids are the client's (upsert).
CREATE TABLE graph_elements (
  session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  id         text NOT NULL,
  seq        bigint GENERATED ALWAYS AS IDENTITY,
  kind       text NOT NULL CHECK (kind IN ('node', 'edge')),
  label      text NOT NULL,
  source     text,
  target     text,
  properties jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, id),
  CHECK ((kind = 'edge') = (source IS NOT NULL AND target IS NOT NULL))
);
CREATE INDEX graph_elements_listing_idx ON graph_elements (session_id, seq);
CREATE INDEX graph_elements_label_idx ON graph_elements (session_id, kind, label, seq);
CREATE INDEX graph_edges_out_idx ON graph_elements (session_id, source, label) WHERE kind = 'edge';
CREATE INDEX graph_edges_in_idx ON graph_elements (session_id, target, label) WHERE kind = 'edge';

-- An execution keeps the graph it runs (a definition may be deleted while it runs), the five run
-- limits resolved at creation, and its durable interpreter state (persisted after every node run).
CREATE TABLE executions (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  session_id    uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  -- Denormalised from the session's blob so the running count per organization is one index scan.
  org_id        uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  definition_id uuid NOT NULL,
  graph         jsonb NOT NULL,
  status        text NOT NULL DEFAULT 'queued'
                CHECK (status IN ('queued', 'running', 'sleeping', 'succeeded', 'failed', 'cancelled')),
  input_data    jsonb,
  output        jsonb,
  error         jsonb,
  limits        jsonb NOT NULL,
  state         jsonb NOT NULL DEFAULT '{}',
  node_runs     integer NOT NULL DEFAULT 0,
  attempts      integer NOT NULL DEFAULT 0,
  schedule_id   uuid,
  created_at    timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz,
  deadline_at   timestamptz,
  ended_at      timestamptz,
  CHECK ((ended_at IS NULL) = (status IN ('queued', 'running', 'sleeping')))
);
CREATE INDEX executions_listing_idx ON executions (session_id, created_at DESC, id DESC);
CREATE INDEX executions_running_idx ON executions (org_id) WHERE ended_at IS NULL;
CREATE INDEX executions_retention_idx ON executions (ended_at) WHERE ended_at IS NOT NULL;

CREATE TABLE session_events (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_id   uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  execution_id uuid,
  kind         text NOT NULL,
  node         text,
  attributes   jsonb NOT NULL DEFAULT '{}',
  at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX session_events_listing_idx ON session_events (session_id, id);

CREATE TABLE execution_events (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
  session_id   uuid NOT NULL,
  kind         text NOT NULL,
  node         text,
  attributes   jsonb NOT NULL DEFAULT '{}',
  at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX execution_events_listing_idx ON execution_events (execution_id, id);
