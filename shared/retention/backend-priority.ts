/**
 * The retention sweep's PostgreSQL backend at a lower CPU priority. A sweep's batches are
 * CPU-bound work of the database server on behalf of nobody waiting, while every tenant's requests
 * wait for the same server's other backends: when PostgreSQL runs on this host (the embedded
 * server, or any server reached over loopback or a Unix socket), the backend serving the sweep's
 * connection gets a higher nice value, so the kernel gives the cores to the other backends, the
 * control plane and the runner first, and to the sweep whatever they leave. With cores to spare it
 * changes nothing, so the sweep can run its batches back to back (docs/retention.md, "How it works (cost)").
 *
 * The process is reniced only after three checks that it is this connection's backend: the
 * server answers on a loopback address or a Unix socket, it sees this connection's own client
 * port (a loopback server of another network namespace could not), and the pid is a process
 * named `postgres` here. Raising a nice value needs the same user or root; lowering it back needs
 * more, so a connection whose backend was lowered is closed after the sweep, never pooled.
 */
import { readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import type pg from 'pg';
import { yieldAutogroup } from '../priority.ts';

/** The sweep backend's nice value by default (`RETENTION_SWEEP_NICE`): the runner's and the model processes'. */
export const DEFAULT_SWEEP_NICE = 10;

export type BackendPriority =
  | {
      lowered: true;
      pid: number;
      nice: number;
      /**
       * The autogroup nice value of the backend's session. With autogroup scheduling the kernel
       * shares the CPU between sessions first and a nice value counts only within its session;
       * PostgreSQL starts every backend as a session of its own (`setsid`), so its own nice value
       * alone would change nothing: the session's is raised too, touching nobody else. Null when
       * the kernel has no autogroups or refused.
       */
      autogroup: number | null;
    }
  | { lowered: false; reason: string };

interface BackendIdentity {
  pid: number;
  server_addr: string | null;
  client_port: number | null;
}

/** The local port of a node-postgres client's socket; undefined over a Unix socket. */
function localPort(client: pg.PoolClient): number | undefined {
  const stream = (client as unknown as { connection?: { stream?: { localPort?: number } } }).connection?.stream;
  return stream?.localPort;
}

function isLoopback(address: string): boolean {
  return address === '::1' || /^127\./.test(address) || /^::ffff:127\./.test(address);
}

/**
 * Raises the nice value of the backend serving `client` to `nice` when it is a process of this
 * host (see above); says why not otherwise. Never lowers a nice value already higher.
 */
export async function lowerBackendPriority(client: pg.PoolClient, nice: number): Promise<BackendPriority> {
  if (nice <= 0) return { lowered: false, reason: 'RETENTION_SWEEP_NICE is 0' };
  if (process.platform !== 'linux') return { lowered: false, reason: `not on Linux (${process.platform})` };
  const { rows } = await client.query<BackendIdentity>(
    'SELECT pg_backend_pid() AS pid, host(inet_server_addr()) AS server_addr, inet_client_port() AS client_port',
  );
  const backend = rows[0]!;
  if (backend.server_addr !== null) {
    if (!isLoopback(backend.server_addr)) return { lowered: false, reason: 'the database server is on another host' };
    if (backend.client_port !== localPort(client)) {
      return { lowered: false, reason: 'the database server is not in this network namespace' };
    }
  }
  let name: string;
  try {
    name = readFileSync(`/proc/${backend.pid}/comm`, 'utf8').trim();
  } catch {
    return { lowered: false, reason: 'the backend is not a process of this host' };
  }
  if (name !== 'postgres')
    return { lowered: false, reason: 'the backend pid is not a PostgreSQL process of this host' };
  try {
    if (getPriority(backend.pid) < nice) setPriority(backend.pid, nice);
    return {
      lowered: true,
      pid: backend.pid,
      nice: getPriority(backend.pid),
      autogroup: yieldAutogroup(nice, backend.pid),
    };
  } catch (error) {
    return {
      lowered: false,
      reason: `the backend's priority cannot be changed (${(error as NodeJS.ErrnoException).code ?? error})`,
    };
  }
}
