/**
 * The HostApi of one `logic.code` run (sandbox/host-bridge.ts): `ctx.objects`, `ctx.thread`,
 * `ctx.graph` and `ctx.log`, bound to the execution's session. Every write goes through the same
 * function as its command (writeSessionObject, postThreadItem, mutateGraph), so checks, ceilings
 * and session events cannot differ between a command and a run. A refusal is thrown as the
 * command's ServiceError; the sandbox hands the code an Error with the same `code` and `limit`
 * (`limit_exceeded` as `LimitExceeded`).
 */
import { z } from 'zod';
import type { Db } from '../shared/db/db.ts';
import { ServiceError } from '../shared/errors.ts';
import { graphMutationCeilings, graphMutationsSchema, mutateGraph } from '../shared/graph/mutations.ts';
import type { SessionGraphBounds } from '../shared/graph/session-graph-usage.ts';
import { runSessionGraphQuery } from '../shared/graph/query.ts';
import { graphQuerySchema } from '../shared/graph/query-schema.ts';
import { aliasSchema } from '../shared/ids.ts';
import { limitsInForce } from '../shared/limits/in-force.ts';
import { writeSessionObject } from '../shared/session/object-writes.ts';
import { listContents, sessionObjectRecord } from '../shared/session/session-objects-sql.ts';
import { threadItemRecord } from '../shared/session/thread-items-sql.ts';
import { postThreadItem, threadItemLimits, threadSchema } from '../shared/session/thread-writes.ts';
import { parseInput } from '../shared/validate.ts';
import type { HostApi } from '../sandbox/host-bridge.ts';
import type { ProcessSandbox } from '../sandbox/sandbox-process.ts';
import type { LogLevel } from '../sandbox/messages.ts';
import { MAX_NODE_LOG_CHARS, MAX_NODE_LOGS, type CodeRunner, type CodeScope, type NodeLog } from './messages.ts';
import type { OutsideCalls } from './outside/outside-calls.ts';
import { Redactor } from './outside/redaction.ts';
import type { EgressMethod } from '../shared/egress/policy.ts';
import { egressRequest } from '../shared/egress/request.ts';

/** `ctx.objects.list`: at most this many objects per page (as `list_session_objects`). */
const LIST_MAX = 200;
const LIST_DEFAULT = 50;
/** A page stops early past this many bytes of values, so one call never copies a huge page into the isolate. */
const LIST_VALUE_BYTES = 4 * 1024 * 1024;

const listOptionsSchema = z.strictObject({
  /** The `cursor` of the previous page: a position in the session, opaque to the code. */
  cursor: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'cursor must be one a previous ctx.objects.list returned')
    .optional(),
  limit: z.int().min(1).max(LIST_MAX).optional(),
});

const threadPostSchema = z.strictObject({
  thread: threadSchema.optional(),
  text: z.string().nullable().optional(),
  data: z.unknown().optional(),
  files: z.array(aliasSchema).optional(),
});

/** `ctx.fetch(url, init)`'s init: the WHATWG subset outside calls take (docs/sandbox.md, "Outside calls"). */
const fetchInitSchema = z
  .strictObject({
    method: z.string().max(16).optional(),
    headers: z.record(z.string().max(256), z.string().max(16_384)).optional(),
    body: z
      .string()
      .max(8 * 1024 * 1024)
      .optional(),
    redirect: z.enum(['follow', 'manual', 'error']).optional(),
    /** Not WHATWG: the call's own bounds, capped by the operator's. */
    timeoutMs: z.int().min(1).optional(),
    maxResponseBytes: z.int().min(1).optional(),
  })
  .nullable();

/** Where a run's log entries go: the first MAX_NODE_LOGS, each cut, the rest counted. */
interface LogSink {
  readonly entries: NodeLog[];
  dropped: number;
  add(level: LogLevel, message: string): void;
}

/** A bounded log sink for one node run. */
function createLogSink(): LogSink {
  const sink: LogSink = {
    entries: [],
    dropped: 0,
    add(level, message) {
      if (sink.entries.length >= MAX_NODE_LOGS) {
        sink.dropped += 1;
        return;
      }
      sink.entries.push({
        level,
        message: message.length > MAX_NODE_LOG_CHARS ? `${message.slice(0, MAX_NODE_LOG_CHARS)}…` : message,
      });
    },
  };
  return sink;
}

/**
 * The host side of `ctx` for one run in `scope`, over `db` (the worker's own small pool).
 * `reportError` receives failures the code only sees as `internal_error`.
 */
function sessionHost(
  db: Db,
  scope: CodeScope,
  logs: LogSink,
  reportError: (error: unknown) => void,
  outside: OutsideCalls | undefined,
  run: { redactor: Redactor; signal: AbortSignal; graphBounds: SessionGraphBounds },
): HostApi {
  const origin = { executionId: scope.executionId, node: scope.node };
  const { redactor } = run;
  const noOutside = () => new ServiceError('forbidden', 'This runner makes no outside calls and reads no credentials.');
  return {
    async fetch(url, init) {
      if (!outside) throw noOutside();
      if (typeof url !== 'string') throw new ServiceError('invalid_request_body', 'ctx.fetch takes a URL string.');
      const options = parseInput(fetchInitSchema, init ?? null, 'init') ?? {};
      const answer = await egressRequest(
        {
          url,
          method: (options.method ?? 'GET').toUpperCase() as EgressMethod,
          ...(options.headers ? { headers: options.headers } : {}),
          ...(options.body !== undefined ? { body: options.body } : {}),
          ...(options.redirect ? { redirect: options.redirect } : {}),
          ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
          ...(options.maxResponseBytes !== undefined ? { maxResponseBytes: options.maxResponseBytes } : {}),
          orgId: scope.orgId,
          signal: run.signal,
        },
        outside.egress,
      );
      return {
        status: answer.status,
        statusText: answer.statusText,
        headers: answer.headers,
        body: answer.body.toString('utf8'),
        url: answer.url,
        redirected: answer.redirected,
      };
    },
    credentials: {
      async get(name) {
        if (!outside) throw noOutside();
        if (typeof name !== 'string')
          throw new ServiceError('invalid_request_body', 'ctx.credentials.get takes a name.');
        const secret = await outside.credentials.get({ orgId: scope.orgId, blobId: scope.blobId }, name);
        redactor.add(secret);
        return secret;
      },
    },
    objects: {
      async get(alias) {
        const name = parseInput(aliasSchema, alias, 'alias');
        const { rows } = await db.query<{ kind: 'object' | 'file'; value: unknown }>(
          'SELECT kind, value FROM session_objects WHERE session_id = $1::uuid AND alias = $2',
          [scope.sessionId, name],
        );
        const row = rows[0];
        if (row === undefined) return null;
        if (row.kind === 'file')
          throw new ServiceError('not_found', `"${name}" is a session file; ctx.objects.get reads objects only.`);
        return row.value;
      },
      async put(alias, value) {
        const inForce = await limitsInForce(db, { blobId: scope.blobId });
        const { row } = await db.transaction((tx) =>
          writeSessionObject(
            tx,
            { sessionId: scope.sessionId, alias, value: redactor.value(value), ...origin },
            {
              // The value the execution started with, not the one in force (docs/workflow.md, "Which limit values apply").
              objectsQuota: {
                id: 'workflow.session_objects_per_session',
                value: scope.sessionObjectsQuota,
                source: 'default',
              },
              objectBytes: inForce['workflow.session_object_bytes'],
            },
          ),
        );
        return sessionObjectRecord(row);
      },
      async list(options) {
        const parsed = parseInput(listOptionsSchema, options ?? {}, 'options');
        const limit = parsed.limit ?? LIST_DEFAULT;
        const rows = await listContents(
          db,
          scope.sessionId,
          parsed.cursor === undefined ? 0 : Number(parsed.cursor),
          limit + 1,
          LIST_VALUE_BYTES,
        );
        const page = rows.filter((row) => row.within).slice(0, limit);
        const last = page.at(-1);
        return {
          objects: page.map(sessionObjectRecord),
          cursor: rows.length > page.length && last ? String(last.seq) : null,
        };
      },
    },
    thread: {
      async post(item) {
        const post = parseInput(threadPostSchema, redactor.value(item), 'item');
        const limits = await threadItemLimits(db, scope.blobId);
        const row = await db.transaction((tx) =>
          postThreadItem(tx, { sessionId: scope.sessionId, ...post, authorId: null, ...origin }, limits),
        );
        return threadItemRecord(row);
      },
    },
    graph: {
      async mutate(mutations) {
        const parsed = parseInput(graphMutationsSchema, redactor.value(mutations), 'mutations');
        const ceilings = { ...(await graphMutationCeilings(db, scope.blobId)), stored: run.graphBounds };
        const outcome = await db.transaction((tx) => mutateGraph(tx, scope.sessionId, parsed, ceilings, origin));
        return { elements: outcome.elements, deleted: outcome.deleted };
      },
      async query(query) {
        const parsed = parseInput(graphQuerySchema, query, 'query');
        return runSessionGraphQuery(db, scope.sessionId, scope.blobId, parsed);
      },
    },
    log: (level, message) => logs.add(level, message),
    reportError,
  };
}

/**
 * Runs `logic.code` nodes in `sandbox` with the HostApi of each node's session: an engine
 * thread's code runner (runner/engine/engine-thread.ts), and the one tests that interpret on their
 * own thread give their interpreter. `graphBounds` is what a session graph may hold
 * (configuration); `reportError` hears of host calls that failed unexpectedly.
 */
export function sandboxCodeRunner(
  db: Db,
  sandbox: ProcessSandbox,
  graphBounds: SessionGraphBounds,
  reportError: (error: unknown) => void,
  outside?: OutsideCalls,
): CodeRunner {
  return {
    async run(task, signal) {
      const logs = createLogSink();
      const redactor = new Redactor();
      // Ends the run's outside calls with the run: a call still in flight must not hold its
      // organization's slot after the code that made it is gone.
      const calls = new AbortController();
      const onAbort = () => calls.abort(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      const host = sessionHost(db, task.scope, logs, reportError, outside, {
        redactor,
        signal: calls.signal,
        graphBounds,
      });
      try {
        const result = await sandbox.run(task.request, host, signal);
        // Whatever the run leaves behind, without the secrets it read (runner/outside/redaction.ts).
        return {
          result: redactor.value(result),
          logs: redactor.value(logs.entries),
          logsDropped: logs.dropped + result.stats.logsDropped,
        };
      } finally {
        signal?.removeEventListener('abort', onAbort);
        calls.abort(new Error('The run has ended.'));
      }
    },
  };
}
