/**
 * A client of a running system for the benchmark and the fault test: REST for the fixtures
 * (account, organization, workflow blob, definition, sessions), JSON-RPC over WebSocket for
 * `create_execution`, with many calls in flight on one socket (the server answers them concurrently).
 */
import WebSocket from 'ws';
import type { System } from './system.ts';

/** A signed-in account. */
export interface Account {
  userId: string;
  token: string;
}

/** One organization with a workflow blob, its revision, one definition and some sessions. */
export interface Workload {
  account: Account;
  orgId: string;
  blobId: string;
  revisionId: string;
  definitionId: string;
  sessionIds: string[];
}

async function rest(
  system: Pick<System, 'apiUrl'>,
  method: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<any> {
  const res = await fetch(`${system.apiUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

/** POST /v1/auth/anonymous. */
export async function signIn(system: Pick<System, 'apiUrl'>): Promise<Account> {
  const body = await rest(system, 'POST', '/v1/auth/anonymous', {});
  return { userId: body.user.id, token: body.access_token };
}

/** A workflow command over REST (`POST /v1/revisions/:id/:command`). */
export function command(
  system: Pick<System, 'apiUrl'>,
  account: Account,
  revisionId: string,
  name: string,
  params: Record<string, unknown>,
): Promise<any> {
  return rest(system, 'POST', `/v1/revisions/${revisionId}/${name}`, params, account.token);
}

/**
 * Overrides a limit the way the ops API stores it (a direct insert: the bench raises quotas past
 * what an operator would, and this is not what it measures).
 */
export async function setOverride(
  system: Pick<System, 'sql'>,
  limitId: string,
  targetType: 'user' | 'org' | 'blob',
  targetId: string,
  value: unknown,
): Promise<void> {
  await system.sql.query(
    `INSERT INTO limit_overrides (limit_id, target_type, target_id, value, set_by) VALUES ($1, $2, $3::uuid, $4::jsonb, 'bench')
     ON CONFLICT (target_type, target_id, limit_id) DO UPDATE SET value = EXCLUDED.value`,
    [limitId, targetType, targetId, JSON.stringify(value)],
  );
}

let aliasSeq = 0;
const alias = (prefix: string) => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++aliasSeq}`;

/**
 * A fresh account with one organization, one workflow blob, a definition of `graph` and
 * `sessions` sessions. Its organization's running executions and its sessions' executions are
 * raised to `quota` each, so only the engine's speed bounds a run.
 */
export async function createWorkload(
  system: Pick<System, 'apiUrl' | 'sql'>,
  graph: unknown,
  options: { sessions: number; quota: number; account?: Account },
): Promise<Workload> {
  const account = options.account ?? (await signIn(system));
  const org = (await rest(system, 'POST', '/v1/orgs', { alias: alias('bench-org') }, account.token)).org;
  const { blob, revision } = await rest(
    system,
    'POST',
    `/v1/blobs/${org.id}`,
    { type: 'svc.compute.workflow', alias: alias('bench-flow') },
    account.token,
  );
  await setOverride(system, 'workflow.running_executions_per_org', 'org', org.id, options.quota);
  await setOverride(system, 'workflow.executions_per_session', 'blob', blob.id, options.quota);
  await setOverride(system, 'workflow.sessions_per_revision', 'blob', blob.id, Math.max(30, options.sessions));
  const definition = (
    await command(system, account, revision.id, 'create_definition', { alias: 'bench', category: 'workflow', graph })
  ).definition;
  const sessionIds: string[] = [];
  for (let i = 0; i < options.sessions; i++)
    sessionIds.push((await command(system, account, revision.id, 'create_session', {})).session.id);
  return { account, orgId: org.id, blobId: blob.id, revisionId: revision.id, definitionId: definition.id, sessionIds };
}

/**
 * `count` organizations of one account, each a workload of one session (`createWorkload`), made
 * `parallel` at a time: the many-organization rows, where one client drives every organization.
 */
export async function createOrgWorkloads(
  system: Pick<System, 'apiUrl' | 'sql'>,
  graph: unknown,
  options: { count: number; quota: number; parallel?: number },
): Promise<Workload[]> {
  const account = await signIn(system);
  await setOverride(system, 'platform.orgs_per_user', 'user', account.userId, options.count + 10);
  const workloads: Workload[] = [];
  let next = 0;
  const lane = async () => {
    while (next < options.count) {
      next += 1;
      workloads.push(await createWorkload(system, graph, { sessions: 1, quota: options.quota, account }));
    }
  };
  await Promise.all(Array.from({ length: options.parallel ?? 8 }, lane));
  return workloads;
}

/** A JSON-RPC connection on which any number of calls may be in flight. */
export interface RpcConnection {
  /** Resolves with the call's `result`; rejects with its `error` (as JSON) or when the socket closes. */
  call(method: string, params: Record<string, unknown>): Promise<any>;
  close(): void;
}

/** Opens a JSON-RPC socket authenticated as `account`. */
export async function connectRpc(system: Pick<System, 'wsUrl'>, account: Account): Promise<RpcConnection> {
  const socket = new WebSocket(system.wsUrl, { headers: { authorization: `Bearer ${account.token}` } });
  const pending = new Map<number, { resolve: (value: any) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    // Notifications (no id) are not this client's business.
    const waiter = frame.id === undefined ? undefined : pending.get(frame.id);
    if (!waiter) return;
    pending.delete(frame.id);
    if (frame.error) waiter.reject(new Error(`JSON-RPC error ${JSON.stringify(frame.error)}`));
    else waiter.resolve(frame.result);
  });
  socket.on('close', () => {
    for (const waiter of pending.values()) waiter.reject(new Error('socket closed'));
    pending.clear();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  return {
    call(method, params) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      });
    },
    close: () => socket.close(),
  };
}

/** `create_execution` in the workload's `session`-th session (round robin); resolves with its id. */
export async function createExecution(
  rpc: RpcConnection,
  workload: Workload,
  index: number,
  input: unknown = { n: index },
): Promise<string> {
  const result = await rpc.call('create_execution', {
    revision_id: workload.revisionId,
    session_id: workload.sessionIds[index % workload.sessionIds.length]!,
    definition_id: workload.definitionId,
    input_data: input,
  });
  return result.execution.id;
}
