-- Graph blobs and NLP datasets (docs/blob-types.md). Each revision of a graph blob is its own
-- graph, with the columns and indexes of a session graph (009) scoped by revision; each revision
-- of an NLP dataset holds its records in upload order.

CREATE TABLE revision_graph_elements (
  revision_id uuid NOT NULL REFERENCES revisions (id) ON DELETE CASCADE,
  id          text NOT NULL,
  seq         bigint GENERATED ALWAYS AS IDENTITY,
  kind        text NOT NULL CHECK (kind IN ('node', 'edge')),
  label       text NOT NULL,
  source      text,
  target      text,
  properties  jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (revision_id, id),
  CHECK ((kind = 'edge') = (source IS NOT NULL AND target IS NOT NULL))
);
CREATE INDEX revision_graph_elements_listing_idx ON revision_graph_elements (revision_id, seq);
CREATE INDEX revision_graph_elements_label_idx ON revision_graph_elements (revision_id, kind, label, seq);
CREATE INDEX revision_graph_edges_out_idx ON revision_graph_elements (revision_id, source, label) WHERE kind = 'edge';
CREATE INDEX revision_graph_edges_in_idx ON revision_graph_elements (revision_id, target, label) WHERE kind = 'edge';

CREATE TABLE nlp_records (
  revision_id uuid NOT NULL REFERENCES revisions (id) ON DELETE CASCADE,
  seq         bigint GENERATED ALWAYS AS IDENTITY,
  text        text NOT NULL,
  labels      jsonb NOT NULL DEFAULT '[]',
  meta        jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (revision_id, seq)
);
