import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import type { Queryable } from '../../shared/db/db.ts';
import { call, type Caller } from './app.ts';
import { connect, wsUrl, type RpcClient } from './ws-client.ts';

/** A command's answer on both transports: REST status and body, and the JSON-RPC reply. */
export interface BothAnswers {
  rest: { status: number; body: any };
  rpc: any;
}

/** Calls revision commands as one caller over REST (inject) and JSON-RPC (a real socket). */
export interface GraphCommandClient {
  rest(command: string, params: unknown): Promise<{ status: number; body: any }>;
  /** The JSON-RPC reply (`result` or `error`). */
  rpc(command: string, params: Record<string, unknown>): Promise<any>;
  both(command: string, params: Record<string, unknown>): Promise<BothAnswers>;
}

/** Opens one socket for `caller` (closed at teardown) and returns a client bound to `revisionId`. */
export async function graphCommandClient(
  t: Test,
  app: FastifyInstance,
  caller: Caller,
  revisionId: string,
): Promise<GraphCommandClient> {
  const socket: RpcClient = await connect(t, await wsUrl(app), { headers: caller.headers });
  let id = 0;
  const rest = async (command: string, params: unknown) => {
    const res = await call(app, 'POST', `/v1/revisions/${revisionId}/${command}`, { as: caller, body: params });
    return { status: res.status, body: res.body };
  };
  const rpc = (command: string, params: Record<string, unknown>) => {
    id += 1;
    return socket.call({ jsonrpc: '2.0', id, method: command, params: { revision_id: revisionId, ...params } });
  };
  return {
    rest,
    rpc,
    async both(command, params) {
      return { rest: await rest(command, params), rpc: await rpc(command, params) };
    },
  };
}

const RPC_CODES: Record<string, number> = { invalid_request_body: -32602, unknown_command: -32601 };

/**
 * Asserts a refusal that both transports answered alike: REST status, `error` and (when given)
 * `limit`; JSON-RPC -32602 for invalid_request_body, -32601 for unknown_command, -32001 otherwise, with the same data.
 */
export function sameRefusal(
  t: Test,
  answers: BothAnswers,
  status: number,
  error: string,
  limit?: Record<string, unknown>,
): void {
  t.equal(answers.rest.status, status, 'REST status');
  t.equal(answers.rest.body.error, error, 'REST error');
  if (limit !== undefined) t.same(answers.rest.body.limit, limit, 'REST limit');
  const { status: _status, ...envelope } = answers.rest.body;
  t.same(
    answers.rpc.error,
    {
      code: RPC_CODES[error] ?? -32001,
      message: envelope.message,
      data: { ...envelope, http_status: status },
    },
    'JSON-RPC error',
  );
}

/** Asserts success on both transports with the same fields; returns the REST body without `status`. */
export function sameSuccess(t: Test, answers: BothAnswers): Record<string, any> {
  t.equal(answers.rest.status, 200, `REST status (${JSON.stringify(answers.rest.body).slice(0, 300)})`);
  const { status, ...fields } = answers.rest.body;
  t.equal(status, 'success');
  t.ok(answers.rpc.result, `JSON-RPC result (${JSON.stringify(answers.rpc).slice(0, 300)})`);
  return fields;
}

/** Creates a session row directly (fixtures only; the session commands are tested elsewhere). */
export async function insertSession(
  q: Queryable,
  revisionId: string,
  alias: string | null = null,
  status: 'active' | 'deleting' = 'active',
): Promise<string> {
  const { rows } = await q.query<{ id: string }>(
    'INSERT INTO sessions (revision_id, alias, status) VALUES ($1::uuid, $2, $3) RETURNING id',
    [revisionId, alias, status],
  );
  return rows[0]!.id;
}

/** A user, organization, workflow blob, revision and session, straight into the database. */
export async function insertSessionChain(
  q: Queryable,
): Promise<{ revisionId: string; blobId: string; sessionId: string }> {
  const { rows } = await q.query<{ revision_id: string; blob_id: string }>(
    `WITH u AS (INSERT INTO users (kind, name) VALUES ('human', 'graph fixture') RETURNING id),
          o AS (INSERT INTO orgs (alias, owner_id) SELECT 'org-' || substr(md5(random()::text), 1, 12), id FROM u RETURNING id),
          b AS (INSERT INTO blobs (alias, org_id, type) SELECT 'blob-' || substr(md5(random()::text), 1, 12), id, 'svc.compute.workflow' FROM o RETURNING id),
          r AS (INSERT INTO revisions (blob_id, number) SELECT id, 1 FROM b RETURNING id, blob_id)
     SELECT id AS revision_id, blob_id FROM r`,
  );
  const { revision_id, blob_id } = rows[0]!;
  return { revisionId: revision_id, blobId: blob_id, sessionId: await insertSession(q, revision_id) };
}

/** Nodes as `[id, label, properties?]`, inserted in one statement, in order. */
export async function insertNodes(
  q: Queryable,
  sessionId: string,
  nodes: ReadonlyArray<readonly [string, string, Record<string, unknown>?]>,
): Promise<void> {
  await q.query(
    `INSERT INTO graph_elements (session_id, id, kind, label, properties)
     SELECT $1::uuid, n.id, 'node', n.label, n.properties::jsonb
       FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS n(id, label, properties, i) ORDER BY n.i`,
    [sessionId, nodes.map((n) => n[0]), nodes.map((n) => n[1]), nodes.map((n) => JSON.stringify(n[2] ?? {}))],
  );
}

/** Edges as `[id, label, source, target, properties?]`, inserted in one statement, in order. */
export async function insertEdges(
  q: Queryable,
  sessionId: string,
  edges: ReadonlyArray<readonly [string, string, string, string, Record<string, unknown>?]>,
): Promise<void> {
  await q.query(
    `INSERT INTO graph_elements (session_id, id, kind, label, source, target, properties)
     SELECT $1::uuid, e.id, 'edge', e.label, e.source, e.target, e.properties::jsonb
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS e(id, label, source, target, properties, i) ORDER BY e.i`,
    [
      sessionId,
      edges.map((e) => e[0]),
      edges.map((e) => e[1]),
      edges.map((e) => e[2]),
      edges.map((e) => e[3]),
      edges.map((e) => JSON.stringify(e[4] ?? {})),
    ],
  );
}

/** `[prefix0, prefix1, ...]`. */
export function ids(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}
