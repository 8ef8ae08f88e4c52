import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import { call, type Caller } from './app.ts';
import { connect, wsUrl, type RpcClient } from './ws-client.ts';

export type Transport = 'rest' | 'rpc';
export const TRANSPORTS: readonly Transport[] = ['rest', 'rpc'];

/**
 * A command's answer in REST terms whatever carried it: the HTTP status and the envelope. Over
 * JSON-RPC a `result` becomes `{status: 'success', ...result}` with 200 (a result's own `status`
 * wins, as REST's `ok()` does) and an `error` becomes the envelope rebuilt from `error.data` with
 * `data.http_status`, so one assertion serves both transports. `rpcCode` is the JSON-RPC error code.
 */
export interface Answer {
  status: number;
  body: any;
  rpcCode?: number;
}

/** JSON-RPC error code for each REST failure (docs/commands.md, "Errors"). */
function rpcCodeFor(error: string): number {
  if (error === 'invalid_request_body') return -32602;
  if (error === 'unknown_command') return -32601;
  return -32001;
}

export interface CommandTransports {
  /** Runs `command` on `revision` as `caller` over `via`. */
  run(
    via: Transport,
    caller: Caller,
    revision: string,
    command: string,
    params?: Record<string, unknown>,
  ): Promise<Answer>;
}

/**
 * Calls revision commands over REST (`app.inject`) or JSON-RPC over a real socket (one per
 * caller, opened on first use and closed at `t`'s teardown). Checks the JSON-RPC frame's own
 * shape on the way, so a test that compares `Answer`s also checks the transport.
 */
export async function commandTransports(t: Test, app: FastifyInstance): Promise<CommandTransports> {
  const url = await wsUrl(app);
  const sockets = new Map<string, Promise<RpcClient>>();
  // Calls may be in flight at once on one socket and answered in any order: replies go by id.
  const waiting = new Map<number, (frame: any) => void>();
  let nextId = 1;

  async function open(caller: Caller): Promise<RpcClient> {
    const client = await connect(t, url, { headers: caller.headers });
    void (async () => {
      for (;;) {
        const frame = await client.next();
        const resolve = waiting.get(frame?.id);
        if (!resolve) throw new Error(`a frame nobody waits for: ${JSON.stringify(frame)}`);
        waiting.delete(frame.id);
        resolve(frame);
      }
    })();
    return client;
  }

  function socketFor(caller: Caller): Promise<RpcClient> {
    let socket = sockets.get(caller.token);
    if (!socket) {
      socket = open(caller);
      sockets.set(caller.token, socket);
    }
    return socket;
  }

  return {
    async run(via, caller, revision, command, params = {}) {
      if (via === 'rest') {
        const res = await call(app, 'POST', `/v1/revisions/${revision}/${command}`, { as: caller, body: params });
        return { status: res.status, body: res.body };
      }
      const id = nextId++;
      const socket = await socketFor(caller);
      const replied = new Promise<any>((resolve) => waiting.set(id, resolve));
      socket.send({ jsonrpc: '2.0', id, method: command, params: { revision_id: revision, ...params } });
      const reply = await replied;
      if (reply.jsonrpc !== '2.0' || reply.id !== id)
        throw new Error(`unexpected JSON-RPC frame: ${JSON.stringify(reply)}`);
      if ('result' in reply) return { status: 200, body: { status: 'success', ...reply.result } };
      const { http_status: status, ...envelope } = reply.error.data;
      if (reply.error.message !== envelope.message)
        throw new Error(`error.message differs from data.message: ${JSON.stringify(reply)}`);
      return { status, body: { status: 'failure', ...envelope }, rpcCode: reply.error.code };
    },
  };
}

/** Asserts a refusal: the HTTP status, the error code, and over JSON-RPC the matching error code. */
export function assertRefusal(t: Test, answer: Answer, status: number, error: string, via: Transport): void {
  t.equal(answer.status, status, `HTTP ${status}`);
  t.equal(answer.body.status, 'failure');
  t.equal(answer.body.error, error);
  if (via === 'rpc') t.equal(answer.rpcCode, rpcCodeFor(error), `JSON-RPC ${rpcCodeFor(error)}`);
}
