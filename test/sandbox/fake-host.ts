/**
 * A HostApi over memory for sandbox tests: session objects with the
 * `workflow.session_objects_per_session` quota, a thread, a graph that echoes, and captured logs.
 */
import type { Test } from 'tap';
import { ServiceError } from '../../shared/errors.ts';
import type { HostApi } from '../../sandbox/host-bridge.ts';
import { IsolatePool, type IsolatePoolOptions } from '../../sandbox/isolate-pool.ts';
import type { CodeRequest, LogLevel } from '../../sandbox/messages.ts';

export interface FakeHost extends HostApi {
  objectsStore: Map<string, unknown>;
  threadItems: unknown[];
  logs: Array<{ level: LogLevel; message: string }>;
  reported: unknown[];
  calls: string[];
}

export function fakeHost(options: { quota?: number } = {}): FakeHost {
  const quota = options.quota ?? 3;
  const objectsStore = new Map<string, unknown>();
  const threadItems: unknown[] = [];
  const logs: FakeHost['logs'] = [];
  const reported: unknown[] = [];
  const calls: string[] = [];
  return {
    objectsStore,
    threadItems,
    logs,
    reported,
    calls,
    objects: {
      async get(alias) {
        calls.push(`objects.get ${alias}`);
        return objectsStore.has(alias) ? objectsStore.get(alias) : null;
      },
      async put(alias, value) {
        calls.push(`objects.put ${alias}`);
        if (alias === 'explode') throw new Error('connection refused at 10.0.0.7:5432 (/srv/secret)');
        if (JSON.stringify(value).length > 1000) {
          throw new ServiceError('session_object_too_large', undefined, {
            limit: { id: 'workflow.session_object_bytes', value: 1000 },
          });
        }
        if (!objectsStore.has(alias) && objectsStore.size >= quota) {
          throw new ServiceError('limit_exceeded', 'The session holds as many objects as it may.', {
            limit: { id: 'workflow.session_objects_per_session', value: quota, held: objectsStore.size },
          });
        }
        objectsStore.set(alias, value);
        return { alias, value };
      },
      async list() {
        calls.push('objects.list');
        return [...objectsStore.keys()];
      },
    },
    thread: {
      async post(item) {
        calls.push('thread.post');
        threadItems.push(item);
        return { id: threadItems.length, ...(item as object) };
      },
    },
    graph: {
      async mutate(mutations) {
        calls.push('graph.mutate');
        return { elements: mutations };
      },
      async query(query) {
        calls.push('graph.query');
        return new Promise((resolve) => setTimeout(() => resolve({ nodes: [query], edges: [] }), 5));
      },
    },
    async fetch(url) {
      calls.push(`fetch ${String(url)}`);
      return {
        status: 200,
        statusText: 'OK',
        headers: { 'content-type': 'text/plain' },
        body: 'fetched',
        url,
        redirected: false,
      };
    },
    credentials: {
      async get(name) {
        calls.push(`credentials.get ${String(name)}`);
        return 'secret';
      },
    },
    log(level, message) {
      logs.push({ level, message });
    },
    reportError(error) {
      reported.push(error);
    },
  };
}

export const ids = {
  executionId: '6f1c1f43-3b0e-4a53-9f3e-0d8b2a9c1e11',
  sessionId: 'a1a1a1a1-3b0e-4a53-9f3e-0d8b2a9c1e22',
  node: 'greet',
};

/** The tenant of test requests: runs of one test pool share its contexts, as one organization's would. */
const tenant = 'org-test';

/**
 * The deadline of a test run that is not about its deadline: long enough that no outcome a test
 * expects (an output, a code_error, a memory stop) can turn into code_timeout because the host is
 * busy with other work (the suite runs files side by side on two cores, and must pass beside a
 * CPU hog). A test of the deadline sets a short `timeoutMs` of its own on code that never ends.
 */
const UNHURRIED_MS = 60_000;

/** A request with test defaults. */
export function request(code: string, extra: Partial<CodeRequest> = {}): CodeRequest {
  return { code, input: null, imports: [], timeoutMs: UNHURRIED_MS, ids, tenant, ...extra };
}

/** A pool that is disposed at teardown even when a test fails early; `made` collects it. */
export function testPool(t: Test, options: IsolatePoolOptions = {}, made?: IsolatePool[]): IsolatePool {
  const pool = new IsolatePool({ size: 2, memoryMb: 32, ...options });
  made?.push(pool);
  t.teardown(() => pool.dispose());
  return pool;
}

/**
 * The last test of a file: disposing its pools leaves no isolate, timer or waiting run behind.
 * `pools` is read when the test runs, so pools made by earlier tests count.
 */
export function testDisposal(t: Test, pools: IsolatePool | IsolatePool[]): void {
  t.test('disposing the pools leaves no isolate behind', async (t) => {
    for (const pool of Array.isArray(pools) ? pools : [pools]) {
      await pool.dispose();
      const stats = pool.stats();
      t.equal(stats.live, 0, 'no isolate is alive');
      t.equal(stats.undisposed, 0, 'every isolate the pool created is disposed');
      t.equal(stats.created, stats.retired, 'every isolate created was retired');
      t.equal(stats.waiting, 0, 'no run waits for an isolate');
    }
    t.same(
      process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'Immediate'),
      [],
      'no timer is left',
    );
  });
}

/**
 * Resolves once `check()` holds, looking every 5 ms; fails after a minute with `what`, so that a
 * test waits for the state it then asserts instead of sleeping a time that a busy host outlasts.
 */
export async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
