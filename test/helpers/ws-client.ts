import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import WebSocket from 'ws';

/** Listens on an ephemeral port (once per app) and returns the WebSocket endpoint's URL. */
export async function wsUrl(app: FastifyInstance): Promise<string> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return `ws://127.0.0.1:${port}/v1`;
}

export interface ConnectOptions {
  headers?: Record<string, string>;
  protocols?: string[];
}

/** A JSON-RPC client over a real socket: frames queue up and are read in arrival order. */
export interface RpcClient {
  socket: WebSocket;
  /** The sub-protocol the server answered with ('' when none). */
  protocol: string;
  /** Resolves with the next frame, parsed. */
  next(): Promise<any>;
  /** Sends `payload` (JSON-encoded unless a string) and resolves with the next frame. */
  call(payload: unknown): Promise<any>;
  send(payload: unknown): void;
  /** Resolves when the socket closes, with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  /** Frames received and not yet read. */
  pending(): number;
}

/** Opens a socket (closed at the test's teardown); rejects when the upgrade is refused. */
export async function connect(t: Test, url: string, options: ConnectOptions = {}): Promise<RpcClient> {
  const socket = new WebSocket(url, options.protocols ?? [], { headers: options.headers ?? {} });
  t.teardown(() => socket.terminate());
  // Failures show up as a rejected open or a close code; an error event must not crash the run.
  socket.on('error', () => {});
  const queue: any[] = [];
  const waiters: Array<(value: any) => void> = [];
  socket.on('message', (data, isBinary) => {
    const text = isBinary ? '<binary>' : data.toString();
    let value: any;
    try {
      value = JSON.parse(text);
    } catch {
      value = text;
    }
    const waiter = waiters.shift();
    if (waiter) waiter(value);
    else queue.push(value);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused with ${res.statusCode}`)));
  });
  const next = () =>
    new Promise<any>((resolve) => {
      if (queue.length > 0) resolve(queue.shift());
      else waiters.push(resolve);
    });
  const send = (payload: unknown) => socket.send(typeof payload === 'string' ? payload : JSON.stringify(payload));
  return {
    socket,
    protocol: socket.protocol,
    next,
    send,
    call(payload) {
      send(payload);
      return next();
    },
    closed,
    pending: () => queue.length,
  };
}

export interface Refusal {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** Attempts an upgrade that should be refused, and returns the HTTP answer. */
export async function refusedUpgrade(url: string, options: ConnectOptions = {}): Promise<Refusal> {
  const socket = new WebSocket(url, options.protocols ?? [], { headers: options.headers ?? {} });
  socket.on('error', () => {});
  try {
    return await new Promise<Refusal>((resolve, reject) => {
      socket.once('open', () => reject(new Error('the upgrade was accepted')));
      socket.once('error', reject);
      socket.once('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let body: any = text;
          try {
            body = JSON.parse(text);
          } catch {
            // left as text: the assertion on it will say what came back
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      });
    });
  } finally {
    socket.terminate();
  }
}

/** base64url without padding, as browsers must send a credential in a sub-protocol. */
export function b64url(value: string): string {
  return Buffer.from(value).toString('base64url');
}
