import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

/** Where ports are drawn from when the kernel's ephemeral range leaves room below it. */
const LOWEST = 10_000;
const ATTEMPTS = 50;

/**
 * The kernel's ephemeral range (`ip_local_port_range`): the local ports of outgoing connections.
 * A port from it that is free now may be taken a moment later by any process's connection (a
 * PostgreSQL client's, say), before the child it was meant for listens on it.
 */
async function ephemeralRange(): Promise<[number, number] | undefined> {
  const text = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => undefined);
  const [low, high] = (text ?? '').trim().split(/\s+/).map(Number);
  return Number.isInteger(low) && Number.isInteger(high) ? [low!, high!] : undefined;
}

/** Binds `port` (0: any) on loopback and lets it go; resolves with the port, or undefined if it was taken. */
function probe(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.on('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A loopback port free now, for a server another process is about to start (tests, the bench,
 * the embedded PostgreSQL of `npm test`). Drawn at random below the ephemeral range, so no
 * outgoing connection can take it before the server listens; only where that range leaves no
 * room is the kernel asked for any free port.
 */
export async function freePort(): Promise<number> {
  const range = await ephemeralRange();
  if (range && range[0] - LOWEST >= 1_000) {
    for (let i = 0; i < ATTEMPTS; i++) {
      const port = await probe(LOWEST + Math.floor(Math.random() * (range[0] - LOWEST)));
      if (port !== undefined) return port;
    }
  }
  const port = await probe(0);
  if (port === undefined) throw new Error('no free loopback port');
  return port;
}
