import t from 'tap';
import { startPeriodic } from '../shared/periodic.ts';

t.test('runs repeatedly, never two runs at once, and keeps going after a failure', async (t) => {
  let active = 0;
  let maxActive = 0;
  let runs = 0;
  const errors: unknown[] = [];
  let release!: () => void;
  const tenRuns = new Promise<void>((resolve) => {
    release = resolve;
  });
  const loop = startPeriodic(
    async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      runs++;
      await new Promise((r) => setTimeout(r, 3));
      active--;
      if (runs === 2) throw new Error('boom');
      if (runs === 10) release();
    },
    { everyMs: 0, onError: (e) => errors.push(e) },
  );
  await tenRuns;
  await loop.stop();
  t.equal(maxActive, 1, 'runs never overlap');
  t.equal(errors.length, 1, 'the failure reached onError');
  t.ok(runs >= 10, 'the loop went on after the failure');
});

t.test('stop waits for the run in flight and schedules nothing after it', async (t) => {
  let finished = false;
  let started!: () => void;
  const inFlight = new Promise<void>((resolve) => {
    started = resolve;
  });
  let runs = 0;
  const loop = startPeriodic(
    async () => {
      runs++;
      started();
      await new Promise((r) => setTimeout(r, 30));
      finished = true;
    },
    { everyMs: 0, firstMs: 0, onError: () => {} },
  );
  await inFlight;
  await loop.stop();
  t.ok(finished, 'stop returned only after the run settled');
  const after = runs;
  await new Promise((r) => setTimeout(r, 20));
  t.equal(runs, after, 'no run after stop');
});
