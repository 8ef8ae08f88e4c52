/**
 * The LISTEN connection behind live events and runners' cancels (shared/db/listen-connection.ts):
 * it reopens after its backend is killed, says the gap was there, and hears notifications again;
 * a connection it cannot open is reported and tried again; closed, it stays closed.
 */
import pg from 'pg';
import t from 'tap';
import type { Test } from 'tap';
import { ListenConnection, type ListenConnectionOptions } from '../shared/db/listen-connection.ts';
import { createTestDatabase } from './helpers/db.ts';

const databaseUrl = await createTestDatabase(t);
const db = new pg.Client({ connectionString: databaseUrl });
await db.connect();
t.teardown(() => db.end());

/** Calls of one callback, awaited one by one. */
function calls<T>(): { push(value: T): void; next(): Promise<T>; count(): number } {
  const queued: T[] = [];
  const waiting: Array<(value: T) => void> = [];
  let total = 0;
  return {
    push(value) {
      total++;
      const waiter = waiting.shift();
      if (waiter) waiter(value);
      else queued.push(value);
    },
    next: () =>
      queued.length > 0 ? Promise.resolve(queued.shift()!) : new Promise((resolve) => waiting.push(resolve)),
    count: () => total,
  };
}

function listener(t: Test, name: string, overrides: Partial<ListenConnectionOptions> = {}) {
  const payloads = calls<string>();
  const errors = calls<unknown>();
  const restored = calls<true>();
  const listen = new ListenConnection({
    connection: { connectionString: databaseUrl },
    applicationName: name,
    channel: 'test_listen',
    onNotification: (payload) => payloads.push(payload),
    onError: (error) => errors.push(error),
    onRestored: () => restored.push(true),
    retryMs: { min: 5, max: 20 },
    ...overrides,
  });
  t.teardown(() => listen.close());
  return { listen, payloads, errors, restored };
}

async function kill(name: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
    [name],
  );
  return rows[0]!.n;
}

t.test('a killed connection is reopened by itself, the gap said, and notifications heard again', async (t) => {
  const { listen, payloads, errors, restored } = listener(t, 'test-listen-reopen');
  await listen.listening();
  await db.query("SELECT pg_notify('test_listen', 'one')");
  t.equal(await payloads.next(), 'one');

  t.equal(await kill('test-listen-reopen'), 1, 'one connection of its own');
  t.ok(await errors.next(), 'the loss is reported');
  await restored.next();
  await db.query("SELECT pg_notify('test_listen', 'two')");
  t.equal(await payloads.next(), 'two', 'heard after the reopen');
  t.equal(restored.count(), 1);
});

t.test('unwanted, a lost connection stays closed until the next listening()', async (t) => {
  let wanted = true;
  const { listen, payloads, errors, restored } = listener(t, 'test-listen-unwanted', { wanted: () => wanted });
  await listen.listening();
  wanted = false;
  t.equal(await kill('test-listen-unwanted'), 1);
  await errors.next();
  await listen.listening();
  await restored.next();
  await db.query("SELECT pg_notify('test_listen', 'three')");
  t.equal(await payloads.next(), 'three');
});

t.test('a connection that cannot be opened rejects, is reported, and is tried again', async (t) => {
  const { listen, errors } = listener(t, 'test-listen-unreachable', {
    // A port nothing listens on: every open fails at once.
    connection: { connectionString: databaseUrl.replace(/:(\d+)\//, ':1/') },
  });
  await t.rejects(listen.listening());
  await errors.next();
  await errors.next();
  t.ok(errors.count() >= 2, 'tried again by itself');
  await listen.close();
  await t.rejects(listen.listening(), { message: 'the listener is closed' });
});
