import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import { call, type Caller } from './app.ts';
import { connect, wsUrl, type RpcClient } from './ws-client.ts';

/** A JSON-RPC socket that sets aside notifications while waiting for an answer. */
export interface Socket {
  client: RpcClient;
  /** Sends one call and resolves with its answer (the whole frame). */
  call(method: string, params: Record<string, unknown>): Promise<any>;
  /** The next notification (one already set aside first). */
  notification(): Promise<any>;
  /** Notifications received and not yet read. */
  pendingNotifications(): number;
}

/** Opens a socket for `caller`, closed at `t`'s teardown. */
export async function openSocket(t: Test, app: FastifyInstance, caller: Pick<Caller, 'headers'>): Promise<Socket> {
  const client = await connect(t, await wsUrl(app), { headers: caller.headers });
  const notifications: any[] = [];
  let nextId = 1;
  return {
    client,
    async call(method, params) {
      const id = nextId++;
      client.send({ jsonrpc: '2.0', id, method, params });
      for (;;) {
        const frame = await client.next();
        if (frame.id === id) return frame;
        if (frame.id === undefined) notifications.push(frame);
        else throw new Error(`unexpected frame ${JSON.stringify(frame)}`);
      }
    },
    async notification() {
      if (notifications.length > 0) return notifications.shift();
      const frame = await client.next();
      if (frame.id !== undefined) throw new Error(`expected a notification, got ${JSON.stringify(frame)}`);
      return frame;
    },
    pendingNotifications: () => notifications.length + client.pending(),
  };
}

/** One command over both transports: the REST answer and the JSON-RPC frame. */
export interface Outcome {
  rest: { status: number; body: any };
  rpc: any;
}

/**
 * Calls revision commands over REST (`app.inject`) and over JSON-RPC (one real socket per
 * caller, opened on first use and closed at `t`'s teardown).
 */
export function transports(t: Test, app: FastifyInstance) {
  const sockets = new Map<string, Promise<Socket>>();
  function socketFor(caller: Pick<Caller, 'headers'>): Promise<Socket> {
    const key = JSON.stringify(caller.headers);
    let socket = sockets.get(key);
    if (!socket) sockets.set(key, (socket = openSocket(t, app, caller)));
    return socket;
  }
  async function rest(
    caller: Pick<Caller, 'headers'>,
    revisionId: string,
    command: string,
    params: unknown,
  ): Promise<{ status: number; body: any }> {
    const { status, body } = await call(app, 'POST', `/v1/revisions/${revisionId}/${command}`, {
      headers: caller.headers,
      body: params,
    });
    return { status, body };
  }
  async function rpc(
    caller: Pick<Caller, 'headers'>,
    revisionId: string,
    command: string,
    params: Record<string, unknown>,
  ): Promise<any> {
    return (await socketFor(caller)).call(command, { revision_id: revisionId, ...params });
  }
  return {
    rest,
    rpc,
    socketFor,
    /** The same call on both transports, REST first. */
    async both(
      caller: Pick<Caller, 'headers'>,
      revisionId: string,
      command: string,
      params: Record<string, unknown>,
    ): Promise<Outcome> {
      return {
        rest: await rest(caller, revisionId, command, params),
        rpc: await rpc(caller, revisionId, command, params),
      };
    },
  };
}

/** Both transports refused alike: HTTP status and code, and the JSON-RPC error carrying the same envelope. */
export function sameRefusal(
  t: Test,
  outcome: Outcome,
  status: number,
  error: string,
  extras: Record<string, unknown> = {},
): void {
  t.equal(outcome.rest.status, status, 'REST status');
  t.equal(outcome.rest.body.error, error, 'REST error');
  for (const [key, value] of Object.entries(extras)) t.same(outcome.rest.body[key], value, `REST ${key}`);
  const { status: _status, ...envelope } = outcome.rest.body;
  const rpcCode = error === 'invalid_request_body' ? -32602 : error === 'unknown_command' ? -32601 : -32001;
  t.same(
    outcome.rpc.error,
    { code: rpcCode, message: envelope.message, data: { ...envelope, http_status: status } },
    'JSON-RPC error',
  );
}
