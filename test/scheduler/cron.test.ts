/**
 * Unit tests of shared/scheduler/cron.ts: validation, and the shortest gap between consecutive
 * fires (`scheduler.min_interval_seconds`) — 6 fields, clocks going forward and back, leap days —
 * checked against croner's own fires walked one by one.
 */
import t from 'tap';
import { Cron } from 'croner';
import { ServiceError } from '../../shared/errors.ts';
import { parseCron, shortestGapSeconds } from '../../shared/scheduler/cron.ts';
import { canonicalZone } from '../../shared/scheduler/zone-transitions.ts';

const gap = (expression: string, zone = 'UTC') => shortestGapSeconds(parseCron(expression, zone));
const HOUR = 3600;
const DAY = 86_400;

t.test('the shortest gap of plain expressions', async (t) => {
  t.equal(await gap('*/30 * * * * *'), 30, 'six fields: every 30 seconds');
  t.equal(await gap('0 */30 * * * *'), 1800);
  t.equal(await gap('* * * * *'), 60);
  t.equal(await gap('0 0 1,2 * *'), DAY, '1st and 2nd of the month: a day');
  t.equal(await gap('0 9,17 * * *'), 8 * HOUR, 'within the day');
  t.equal(await gap('0 22 * * *'), DAY);
  t.equal(await gap('0 1,23 * * *'), 2 * HOUR, 'across midnight: 23:00 to 01:00');
  t.equal(await gap('0 0 * * 1'), 7 * DAY, 'weekly');
  t.equal(await gap('0 0 * * 5,1'), 3 * DAY, 'Friday to Monday');
  t.equal(await gap('0 0 1 * *'), 28 * DAY, 'monthly: February is the short one');
  t.equal(await gap('0 0 31 * *'), 31 * DAY, 'the 31st: July 31 to August 31');
  t.equal(await gap('0 0 L * *'), 28 * DAY, 'last day of the month');
  t.equal(await gap('0 0 29 2 *'), 1461 * DAY, 'leap day: four years');
  t.equal(await gap('0 0 28,29 2 *'), DAY, 'Feb 28 then 29 in a leap year');
  t.equal(await gap('0 0 1 1 *'), 365 * DAY, 'yearly');
  t.equal(await gap('0 12 * * 1#2'), 28 * DAY, 'second Monday of the month');
  t.equal(await gap('0 0 13 * 5'), DAY, 'the 13th or a Friday: Friday 12th, then Saturday 13th');
});

t.test('clocks going forward and back count the way croner fires', async (t) => {
  t.equal(
    await gap('30 1 * * *', 'America/New_York'),
    23 * HOUR,
    'spring forward: a 23-hour day (1:30 exists both days)',
  );
  t.equal(
    await gap('0 2 * * *', 'America/New_York'),
    23 * HOUR,
    '2:00 does not exist in spring: it runs as the clock jumps',
  );
  t.equal(
    await gap('30 1 * * *', 'Europe/London'),
    23.5 * HOUR,
    'London skips 1:00-2:00: 1:30 runs at the jump, 2:00 BST',
  );
  t.equal(
    await gap('0,59 1 * * *', 'America/New_York'),
    60,
    'fall back: 1:59, then 1:00 again a minute later (both passes of an interval pattern)',
  );
  t.equal(await gap('0 0 * * *', 'Australia/Lord_Howe'), DAY - 1800, 'a zone whose clocks move 30 minutes');
  t.equal(await gap('0 0 * * *', 'Asia/Tokyo'), DAY, 'no DST');
  t.equal(await gap('*/5 * * * *', 'Europe/London'), 300);
  t.equal(
    await gap('0 12 1 3,4 *', 'America/New_York'),
    31 * DAY - HOUR,
    'March 1 to April 1 straddles spring forward',
  );
  t.equal(await gap('0 0 29 2 *', 'Europe/Paris'), 1461 * DAY, 'winter to winter');
});

t.test(
  "the gap is never longer than a gap croner's fires show, and equals the shortest for dense patterns",
  async (t) => {
    const cases: Array<[string, string]> = [
      ['30 1 * * *', 'America/New_York'],
      ['0,59 1 * * *', 'America/New_York'],
      ['*/20 1,2 * * *', 'Europe/Berlin'],
      ['0 2 * * 0', 'America/Chicago'],
      ['15 3 * * *', 'Europe/Paris'],
      ['0 */7 * * *', 'UTC'],
      ['45 0,1 * * *', 'Australia/Sydney'],
    ];
    for (const [expression, zone] of cases) {
      const computed = await gap(expression, zone);
      const cron = new Cron(expression, { timezone: zone, paused: true });
      let previous = cron.nextRun(new Date('2026-01-01T00:00:00Z'))!;
      let walked = Infinity;
      // Two years of fires, one by one: both clock changes twice.
      for (let i = 0; i < 5000 && previous.getTime() < Date.parse('2028-01-01T00:00:00Z'); i++) {
        const next = cron.nextRun(previous)!;
        walked = Math.min(walked, (next.getTime() - previous.getTime()) / 1000);
        previous = next;
      }
      t.equal(computed, walked, `${expression} in ${zone}`);
    }
  },
);

t.test('validation names what is wrong', async (t) => {
  const refused = (expression: string, zone?: string) => {
    try {
      parseCron(expression, zone);
      return null;
    } catch (error) {
      return error instanceof ServiceError ? `${error.code}: ${error.message}` : String(error);
    }
  };
  t.match(refused('0 0 0 1 1 * 2030'), /invalid_request_body: .*got 7/);
  t.match(refused('0 0 *'), /got 3/);
  t.match(refused('60 * * * *'), /minute/);
  t.match(refused('0 0 32 * *'), /day/);
  t.match(refused('0 0 * 13 *'), /month/);
  t.match(refused('0 0 * * 8'), /dayOfWeek/);
  t.match(refused('0 0 30 2 *'), /never fires/);
  t.match(refused('@hourly'), /nicknames/);
  t.match(refused('0 0 * * *', 'Not/AZone'), /timezone/);
  t.match(refused('0 0 * * *', '../../etc/passwd'), /timezone/);
  t.match(refused('x'.repeat(500)), /200 characters/);
  t.equal(refused('0 0 * * MON-FRI', 'Europe/Paris'), null, 'names of days');
  t.equal(parseCron('  0   0 * * *  ').expression, '0 0 * * *', 'spaces normalised');
});

t.test('time zones are kept by their canonical name, whatever the case or alias sent', async (t) => {
  t.equal(parseCron('0 0 * * *', 'america/NEW_york').timezone, 'America/New_York');
  t.equal(parseCron('0 0 * * *', 'Etc/UTC').timezone, 'UTC');
  t.equal(parseCron('0 0 * * *', 'Europe/Paris').timezone, 'Europe/Paris');
});

t.test('letter-case variants of a zone are resolved from a table, without an Intl object each', async (t) => {
  const Original = Intl.DateTimeFormat;
  let built = 0;
  Intl.DateTimeFormat = new Proxy(Original, {
    construct(target, args: ConstructorParameters<typeof Intl.DateTimeFormat>) {
      built += 1;
      return new target(...args);
    },
  });
  t.teardown(() => {
    Intl.DateTimeFormat = Original;
  });
  canonicalZone('UTC');
  canonicalZone('us/eastern');
  const before = built;
  const answers = new Set<string | undefined>();
  for (let i = 0; i < 1000; i++) {
    const variant = [...'america/new_york'].map((c, j) => ((i >> j) & 1 ? c.toUpperCase() : c)).join('');
    answers.add(canonicalZone(variant));
  }
  t.same([...answers], ['America/New_York'], '1,000 variants, one zone');
  t.equal(canonicalZone('US/EASTERN'), 'America/New_York', 'an alias met once');
  t.equal(canonicalZone('us/PACIFIC'), 'America/Los_Angeles');
  t.equal(built, before + 1, 'only us/pacific, an alias not met before, asked Intl');
  t.equal(canonicalZone('Nowhere/Atlantis'), undefined);
});

t.test('the gap is computed in slices: the event loop turns while a costly expression is checked', async (t) => {
  let turns = 0;
  let counting = true;
  const count = () => {
    turns++;
    if (counting) setImmediate(count);
  };
  setImmediate(count);
  // Every second, in a zone with clock changes: thousands of steps at any speed of machine.
  t.equal(await gap('0 * * * * *', 'Europe/London'), 60);
  counting = false;
  t.ok(turns > 1, `the event loop turned ${turns} times during the check`);
});

t.test('under a floor, the wall-clock gap refuses without walking the clock changes', async (t) => {
  const parsed = parseCron('* * * * * *', 'America/New_York');
  t.equal(await shortestGapSeconds(parsed, 60), 1, 'one second: under any floor');
  t.equal(await shortestGapSeconds(parseCron('0 2 * * *', 'America/New_York'), 60), 23 * HOUR, 'above it: exact');
});
