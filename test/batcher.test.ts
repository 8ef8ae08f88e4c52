import t from 'tap';
import { Batcher } from '../shared/batcher.ts';

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

t.test('items submitted while a flush is in progress share the next flush', async (t) => {
  const batches: number[][] = [];
  const gates: Array<ReturnType<typeof deferred<void>>> = [];
  const batcher = new Batcher<number, string>({
    maxBatch: 100,
    maxInFlight: 1,
    async flush(items) {
      batches.push(items);
      const gate = deferred<void>();
      gates.push(gate);
      await gate.promise;
      return items.map((item) => `r${item}`);
    },
  });
  const first = batcher.submit(1);
  while (batches.length < 1) await new Promise((resolve) => setImmediate(resolve));
  const rest = [2, 3, 4].map((item) => batcher.submit(item));
  t.same(batches, [[1]], 'the first item leaves at once; the others wait for the flush in progress');
  gates[0]!.resolve();
  t.equal(await first, 'r1');
  while (gates.length < 2) await new Promise((resolve) => setImmediate(resolve));
  t.same(batches, [[1], [2, 3, 4]]);
  gates[1]!.resolve();
  t.same(await Promise.all(rest), ['r2', 'r3', 'r4'], 'each item gets its own result');
});

t.test('items submitted in the same turn of the event loop leave together', async (t) => {
  const batches: number[][] = [];
  const batcher = new Batcher<number, number>({
    maxBatch: 10,
    maxInFlight: 2,
    flush: async (items) => {
      batches.push(items);
      return items;
    },
  });
  await Promise.all([1, 2, 3].map((item) => batcher.submit(item)));
  t.same(batches, [[1, 2, 3]]);
});

t.test('maxBatch splits, maxInFlight bounds concurrent flushes, a failure rejects only its batch', async (t) => {
  let inFlight = 0;
  let most = 0;
  const sizes: number[] = [];
  const batcher = new Batcher<number, number>({
    maxBatch: 3,
    maxInFlight: 2,
    async flush(items) {
      inFlight++;
      most = Math.max(most, inFlight);
      sizes.push(items.length);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      if (items.includes(4)) throw new Error('boom');
      return items.map((item) => item * 10);
    },
  });
  const results = await Promise.allSettled([1, 2, 3, 4, 5, 6, 7].map((item) => batcher.submit(item)));
  t.same(sizes, [3, 3, 1]);
  t.equal(most, 2);
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled'],
  );
  t.equal((results[6] as PromiseFulfilledResult<number>).value, 70);
});

t.test('a flush returning the wrong number of results rejects its items', async (t) => {
  const batcher = new Batcher<number, number>({ maxBatch: 10, maxInFlight: 1, flush: async () => [1] });
  await t.rejects(Promise.all([batcher.submit(1), batcher.submit(2)]), /2 items/);
});
