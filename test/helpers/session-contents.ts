import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import { call, signInAnonymous, type Caller } from './app.ts';
import { grant } from './access.ts';
import { createBlob, createOrg } from './resources.ts';
import { connect, wsUrl, type RpcClient } from './ws-client.ts';

/** The two transports of a command, REST and JSON-RPC 2.0 (docs/commands.md). */
export const VIAS = ['rest', 'rpc'] as const;
type Via = (typeof VIAS)[number];

/**
 * A command's answer in one shape whatever the transport: REST's status and body, or a JSON-RPC
 * reply turned into the REST envelope it stands for (`http_status` from `error.data`), keeping the
 * JSON-RPC error code to assert on.
 */
interface Outcome {
  status: number;
  body: any;
  rpcCode?: number;
}

export interface Transports {
  /** Runs `command` on `revisionId` over `via`. */
  run(via: Via, revisionId: string, command: string, params?: Record<string, unknown>): Promise<Outcome>;
  /** Upload Session File: the binary REST route, or the JSON-RPC command with `content_base64`. */
  upload(via: Via, revisionId: string, target: Record<string, unknown>, bytes: Buffer): Promise<Outcome>;
  /** Download Session File: `bytes` and the parsed `X-Response-Body` (REST) or decoded `content_base64` (JSON-RPC). */
  download(
    via: Via,
    revisionId: string,
    ref: Record<string, unknown>,
  ): Promise<Outcome & { bytes?: Buffer; contentType?: string }>;
}

function fromRpc(reply: any): Outcome {
  if (reply.error) {
    const { http_status, ...data } = reply.error.data;
    return { status: http_status, body: { status: 'failure', ...data }, rpcCode: reply.error.code };
  }
  return { status: 200, body: { status: 'success', ...reply.result } };
}

/**
 * Opens one socket for `caller` and returns callers for both transports. JSON-RPC calls on the
 * socket are serialised, so each reply read is the one to the call just sent.
 */
async function openTransports(t: Test, app: FastifyInstance, caller: Pick<Caller, 'headers'>): Promise<Transports> {
  const client: RpcClient = await connect(t, await wsUrl(app), { headers: caller.headers });
  let chain: Promise<unknown> = Promise.resolve();
  let nextId = 1;
  const rpc = (method: string, params: Record<string, unknown>): Promise<Outcome> => {
    const done = chain.then(async () => {
      const id = nextId++;
      const reply = await client.call({ jsonrpc: '2.0', id, method, params });
      if (reply.id !== id) throw new Error(`reply to ${reply.id} while waiting for ${id}`);
      return fromRpc(reply);
    });
    chain = done.catch(() => {});
    return done;
  };
  return {
    async run(via, revisionId, command, params = {}) {
      if (via === 'rpc') return rpc(command, { revision_id: revisionId, ...params });
      const { status, body } = await call(app, 'POST', `/v1/revisions/${revisionId}/${command}`, {
        headers: caller.headers,
        body: params,
      });
      return { status, body };
    },
    async upload(via, revisionId, target, bytes) {
      if (via === 'rpc')
        return rpc('upload_session_file', {
          revision_id: revisionId,
          ...target,
          content_base64: bytes.toString('base64'),
        });
      const res = await app.inject({
        method: 'POST',
        url: `/v1/revisions/${revisionId}/upload_session_file`,
        headers: {
          ...caller.headers,
          'content-type': 'application/octet-stream',
          'x-request-body': JSON.stringify(target),
        },
        payload: bytes,
      });
      return { status: res.statusCode, body: res.json() };
    },
    async download(via, revisionId, ref) {
      if (via === 'rpc') {
        const outcome = await rpc('download_session_file', { revision_id: revisionId, ...ref });
        if (outcome.status !== 200) return outcome;
        return {
          ...outcome,
          bytes: Buffer.from(outcome.body.content_base64, 'base64'),
          contentType: outcome.body.content_type,
        };
      }
      const res = await app.inject({
        method: 'POST',
        url: `/v1/revisions/${revisionId}/download_session_file`,
        headers: caller.headers,
        payload: ref,
      });
      if (res.statusCode !== 200) return { status: res.statusCode, body: res.json() };
      const header = res.headers['x-response-body'];
      return {
        status: res.statusCode,
        body: typeof header === 'string' ? JSON.parse(header) : undefined,
        bytes: res.rawPayload,
        contentType: res.headers['content-type'] as string,
      };
    },
  };
}

/** Creates a session through `create_session` and returns its record. */
export async function createSession(
  app: FastifyInstance,
  as: Pick<Caller, 'headers'>,
  revisionId: string,
  alias?: string,
): Promise<Record<string, any>> {
  const { status, body } = await call(app, 'POST', `/v1/revisions/${revisionId}/create_session`, {
    headers: as.headers,
    body: alias ? { alias } : {},
  });
  if (status !== 200 && status !== 201) throw new Error(`create_session failed: ${status} ${JSON.stringify(body)}`);
  return body.session;
}

/**
 * Puts a session in the state Delete Session leaves it in until its rows are removed
 * (`deleting`), and keeps it there: the background removal would otherwise race the assertion.
 */
export async function markDeleting(app: FastifyInstance, sessionId: string): Promise<void> {
  await app.ctx.db.query(`UPDATE sessions SET status = 'deleting' WHERE id = $1::uuid`, [sessionId]);
}

/** The session events of `kind`, oldest first (the events' own listing is tested elsewhere). */
export async function sessionEvents(
  app: FastifyInstance,
  sessionId: string,
  kind: string,
): Promise<Array<{ kind: string; attributes: any; execution_id: string | null }>> {
  const { rows } = await app.ctx.db.query<{ kind: string; attributes: any; execution_id: string | null }>(
    'SELECT kind, attributes, execution_id FROM session_events WHERE session_id = $1::uuid AND kind = $2 ORDER BY id',
    [sessionId, kind],
  );
  return rows;
}

/** How many advisory locks sessions of this test's database are waiting for. */
export async function advisoryWaiters(app: FastifyInstance): Promise<number> {
  const { rows } = await app.ctx.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  return rows[0]!.n;
}

/** Resolves once `condition` holds, checking again after each turn of the event loop (no deadline: tap's timeout is the bound). */
export async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setImmediate(resolve));
}

/** A promise that records whether it has settled. */
export function tracked<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  const wrapped = promise.finally(() => {
    settled = true;
  });
  return { promise: wrapped, settled: () => settled };
}

/**
 * The fixture every session-content test file starts from: an owner, a caller with `read` on the
 * owner's workflow blob, a stranger, and both transports for each.
 */
export async function sessionContentFixture(t: Test, app: FastifyInstance) {
  const alice = await signInAnonymous(app);
  const reader = await signInAnonymous(app);
  const stranger = await signInAnonymous(app);
  const org = await createOrg(app, alice);
  const { blob, revision } = await createBlob(app, alice, org.id);
  await grant(app, alice, 'blob', blob.id, reader.user.id, 'read');
  return {
    alice,
    reader,
    stranger,
    org,
    blob,
    revision,
    as: await openTransports(t, app, alice),
    asReader: await openTransports(t, app, reader),
    asStranger: await openTransports(t, app, stranger),
  };
}
