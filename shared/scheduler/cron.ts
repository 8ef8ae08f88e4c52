/**
 * Cron expressions of schedules (docs/scheduler.md): 5 fields (minute first) or 6 (seconds
 * first), read in an IANA time zone. croner parses and walks them — including its rules for the
 * hour that repeats or disappears when the clocks change — and this module adds only what croner
 * does not have: the validation messages a client sees, and the shortest gap between two
 * consecutive fires (`scheduler.min_interval_seconds`, shortestGapSeconds).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Cron, CronPattern } from 'croner';
import { ByteBoundedCache } from '../byte-bounded-cache.ts';
import { ServiceError } from '../errors.ts';
import { canonicalZone, offsetMinutes, transitionsOf } from './zone-transitions.ts';

/** Longest expression and time-zone name accepted (a cron needs far less). */
const MAX_EXPRESSION = 200;
const MAX_ZONE = 64;

export const DEFAULT_TIMEZONE = 'UTC';

/** A validated expression, ready to compute fires. */
export interface ParsedCron {
  expression: string;
  timezone: string;
  /** How the expression counts: 5 fields fire on whole minutes, 6 name the second too. */
  fields: 5 | 6;
  cron: Cron;
  /** croner's reading of the fields (which seconds, minutes, hours… match). */
  pattern: CronPattern;
}

function invalid(field: 'cron' | 'timezone', message: string): ServiceError {
  return new ServiceError('invalid_request_body', `Invalid params: ${field}: ${message}`);
}

/**
 * The canonical name of a time zone the platform's time-zone database knows (`Europe/Paris`,
 * `UTC`), whatever letter case or alias it was sent in; undefined for anything else.
 */
function timeZoneOf(name: string): string | undefined {
  // Offsets (`+01:00`) are valid to Intl but are not zones: they have no DST rules to follow.
  if (name.length === 0 || name.length > MAX_ZONE || !/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return undefined;
  return canonicalZone(name);
}

/**
 * Parses `expression` in `timezone` or throws `invalid_request_body` naming what is wrong: the
 * number of fields, a value out of range or a malformed part (croner's own words), an unknown
 * zone, or an expression that never fires (`0 0 30 2 *`).
 */
export function parseCron(expression: string, timezone: string = DEFAULT_TIMEZONE, now: Date = new Date()): ParsedCron {
  if (expression.length > MAX_EXPRESSION) throw invalid('cron', `at most ${MAX_EXPRESSION} characters`);
  const zone = timeZoneOf(timezone);
  if (zone === undefined)
    throw invalid(
      'timezone',
      `${JSON.stringify(timezone.slice(0, MAX_ZONE))} is not an IANA time zone (e.g. "UTC", "Europe/Paris")`,
    );
  const parts = expression
    .trim()
    .split(/\s+/)
    .filter((p) => p !== '');
  if (parts.some((p) => p.startsWith('@')))
    throw invalid('cron', 'nicknames such as @daily are not accepted: write the fields');
  if (parts.length !== 5 && parts.length !== 6) {
    throw invalid(
      'cron',
      `needs 5 fields (minute hour day-of-month month day-of-week) or 6 (a seconds field first); got ${parts.length}`,
    );
  }
  const fields = parts.length as 5 | 6;
  let cron: Cron;
  let pattern: CronPattern;
  try {
    const mode = fields === 5 ? '5-part' : '6-part';
    cron = new Cron(parts.join(' '), { timezone: zone, paused: true, mode });
    pattern = new CronPattern(parts.join(' '), zone, { mode });
  } catch (error) {
    throw invalid('cron', String((error as Error).message).replace(/^CronPattern: /, ''));
  }
  if (cron.nextRun(now) === null) throw invalid('cron', 'the expression never fires');
  return { expression: parts.join(' '), timezone: zone, fields, cron, pattern };
}

/** The first fire strictly after `after`, or null when there is none (never, for a parsed expression). */
export function nextFire(parsed: ParsedCron, after: Date): Date | null {
  return parsed.cron.nextRun(after);
}

const DAY = 86_400;
const DAY_MS = DAY * 1000;

/**
 * The gap computation's work in slices: after each step (a croner match or walk step: from a few
 * microseconds to a fraction of a millisecond) it looks at the clock, and once a slice has run
 * SLICE_MS it gives the event loop a turn, so an expression that is costly to check delays the
 * requests of others by one slice, not by its whole check.
 */
const SLICE_MS = 2;

class Slices {
  #start = performance.now();

  /** Ends the slice when it has run long enough: resolves after the event loop's next turn. */
  async step(): Promise<void> {
    if (performance.now() - this.#start < SLICE_MS) return;
    await nextTurn();
    this.#start = performance.now();
  }
}

/** The seconds of the day the expression fires at, ascending (its hours, minutes and seconds fields). */
function timesOfDay(pattern: CronPattern): number[] {
  const times: number[] = [];
  for (let h = 0; h < 24; h++) {
    if (!pattern.hour[h]) continue;
    for (let m = 0; m < 60; m++) {
      if (!pattern.minute[m]) continue;
      for (let s = 0; s < 60; s++) if (pattern.second[s]) times.push(h * 3600 + m * 60 + s);
    }
  }
  return times;
}

// The calendar a day's match depends on (month lengths, leap years, weekdays) repeats its every
// situation within 28 years that contain no century year; 2001–2028 holds all 14 kinds of year
// and every pair of neighbouring kinds. A gap between matching days can only be longer elsewhere
// (2100 is no leap year: a 29 February pattern waits 8 years there, not 4).
const DAYS_FROM = Date.UTC(2001, 0, 1);
const DAYS_TO = Date.UTC(2029, 0, 1);

// Keys are a client's day fields (≤ 200 characters): 256 KiB holds ~1,000 of the longest.
const dayGapCache = new ByteBoundedCache<number>(256 * 1024);

/**
 * The fewest days between two consecutive days the expression's day-of-month, month and
 * day-of-week fields match, as croner matches them (OR of day-of-month and day-of-week, `L`,
 * `W`, `#`): croner matches each day of the window at midnight, in UTC so that no day is skipped.
 */
async function shortestDayGap(dayFields: string, slices: Slices): Promise<number> {
  const cached = dayGapCache.get(dayFields);
  if (cached !== undefined) return cached;
  const days = new Cron(`0 0 0 ${dayFields}`, { utcOffset: 0, paused: true, mode: '6-part' });
  const months = new CronPattern(`0 0 0 ${dayFields}`, undefined, { mode: '6-part' }).month;
  const seen = new Map<number, boolean>();
  let previous: number | undefined;
  let shortest = Infinity;
  for (let at = DAYS_FROM; at < DAYS_TO && shortest > 1;) {
    const date = new Date(at);
    if (!months[date.getUTCMonth()]) {
      at = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
      continue;
    }
    // A day's match depends only on its month, its day, its weekday and its month's length
    // (croner's L, W and # read nothing else), so each combination is asked of croner once.
    const day = date.getUTCDate();
    const length = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate();
    const key = ((date.getUTCMonth() * 32 + day) * 8 + date.getUTCDay()) * 4 + (length - 28);
    let matches = seen.get(key);
    if (matches === undefined) {
      matches = days.match(date);
      seen.set(key, matches);
      await slices.step();
    }
    if (matches) {
      if (previous !== undefined) shortest = Math.min(shortest, Math.round((at - previous) / DAY_MS));
      previous = at;
    }
    at += DAY_MS;
  }
  dayGapCache.set(dayFields, shortest, 16);
  return shortest;
}

/** How far ahead the clock changes of the zone are examined. */
const TRANSITION_YEARS = 28;

/**
 * `scheduler.min_interval_seconds` of an expression: the shortest gap, in seconds, between two
 * consecutive fires in its time zone, clock changes included, counted the way croner fires
 * (a fixed time of day in a skipped hour runs when the clock jumps, a repeated one runs once; an
 * interval pattern skips the missing hour and runs both passes of the repeated one — so
 * `0,59 1 * * *` in a zone that falls back at 2:00 fires 1:59 and, a minute later, 1:00 again).
 *
 * Exact and fast for every expression: the wall-clock gaps come from the fields (the times of
 * day, and the days matched across a 28-year calendar window), and real time differs from wall
 * time only around a clock change, where croner's own fires are walked — once per distinct
 * situation (the change's time, its size, which nearby days match), plus, for each change, the
 * one pair of fires that straddles it.
 *
 * `refuseBelow`: a floor no value in force can pass (the catalog's most permissive value). When
 * the wall-clock gap alone is already under it, that gap is answered without walking the clock
 * changes — the expression is refused whatever they add, and the walk of a dense expression
 * (`* * * * * *`: thousands of fires per change) is the costly part. The answer is then an upper
 * bound of the shortest gap, still under the floor. The work runs in slices (Slices), never
 * holding the event loop for more than one.
 */
export async function shortestGapSeconds(parsed: ParsedCron, refuseBelow = 0): Promise<number> {
  const key = `${parsed.timezone} ${parsed.expression}`;
  const known = gapCache.get(key);
  if (known !== undefined) return known;
  const slices = new Slices();
  const wall = await wallClockGap(parsed, slices);
  if (wall < refuseBelow) return wall;
  const gap = await computeShortestGap(parsed, wall, slices);
  gapCache.set(key, gap, 16);
  return gap;
}

/** The shortest gap of `parsed` if it was computed before (shortestGapSeconds), else undefined. */
export function knownGapSeconds(parsed: ParsedCron): number | undefined {
  return gapCache.get(`${parsed.timezone} ${parsed.expression}`);
}

/** Shortest gaps already computed, by zone and expression (a day's clock changes barely move them). */
const gapCache = new ByteBoundedCache<number>(512 * 1024);

/** The shortest gap in wall-clock time: within a day, and between the days the expression matches. */
async function wallClockGap(parsed: ParsedCron, slices: Slices): Promise<number> {
  const times = timesOfDay(parsed.pattern);
  let withinDay = Infinity;
  for (let i = 1; i < times.length; i++) withinDay = Math.min(withinDay, times[i]! - times[i - 1]!);
  const dayGap = await shortestDayGap(parsed.expression.split(' ').slice(-3).join(' '), slices);
  const spread = times.at(-1)! - times[0]!;
  return Math.min(withinDay, dayGap * DAY - spread);
}

/** The shortest gap, clock changes included, from the wall-clock gap (see shortestGapSeconds). */
async function computeShortestGap(parsed: ParsedCron, wallGap: number, slices: Slices): Promise<number> {
  const parts = parsed.expression.split(' ');
  let shortest = wallGap;

  const cron = parsed.cron;
  const dayMatcher = new Cron(`0 0 0 ${parts.slice(-3).join(' ')}`, { utcOffset: 0, paused: true, mode: '6-part' });
  // The expression in wall-clock time: its fires as if the zone kept one offset all year.
  const wallClock = new Cron(parsed.expression, {
    utcOffset: 0,
    paused: true,
    mode: parsed.fields === 5 ? '5-part' : '6-part',
  });
  const matchesWallDay = (ms: number, offsetMinutes: number, shiftDays: number) => {
    const wall = new Date(ms + offsetMinutes * 60_000 + shiftDays * DAY_MS);
    return dayMatcher.match(new Date(Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate())))
      ? '1'
      : '0';
  };
  // Which fires lie near a change is fixed by its key (the change's size and wall time, and which
  // of the three wall days around it match); a later change with the same key repeats them.
  const walked = new Map<string, boolean>();
  // The straddling pair found last: a change before its second fire straddles the same pair.
  let pairEnd = -Infinity;
  for (const change of transitionsOf(parsed.timezone, Date.now(), TRANSITION_YEARS)) {
    await slices.step();
    const wallSeconds = (((change.at / 1000 + change.fromMinutes * 60) % DAY) + DAY) % DAY;
    const key = `${change.toMinutes - change.fromMinutes}:${wallSeconds}:${[-1, 0, 1].map((d) => matchesWallDay(change.at, change.fromMinutes, d)).join('')}`;
    const bothSides = walked.get(key);
    if (bothSides === true) continue;
    if (bothSides === false) {
      // The pair of fires that straddles the change. Away from the change's own hour its gap is the
      // wall gap less the change, read off the expression in wall time (croner on a fixed offset:
      // plain arithmetic, no time-zone lookups); a fire near the change is croner's own, walked.
      if (change.at < pairEnd) continue;
      const wallAt = change.at + change.fromMinutes * 60_000;
      const wallAfter = wallClock.nextRun(new Date(wallAt - 1000));
      const wallBefore = wallAfter === null ? undefined : wallClock.previousRuns(1, wallAfter)[0];
      if (wallAfter === null || wallBefore === undefined) break;
      const reach = Math.abs(change.toMinutes - change.fromMinutes) * 60_000 + 1000;
      if (wallAfter.getTime() > wallAt + reach && wallBefore.getTime() < wallAt - reach) {
        // Each fire at its own offset (the pair may straddle other changes too: a leap day's).
        const real = (wall: number, guess: number) =>
          wall -
          offsetMinutes(wall - offsetMinutes(wall - guess * 60_000, parsed.timezone) * 60_000, parsed.timezone) *
            60_000;
        const before = real(wallBefore.getTime(), change.fromMinutes);
        const after = real(wallAfter.getTime(), change.toMinutes);
        shortest = Math.min(shortest, (after - before) / 1000);
        pairEnd = after;
        continue;
      }
      const after = cron.nextRun(new Date(change.at - 1000));
      if (after === null) break;
      const before = cron.previousRuns(1, after)[0];
      if (before !== undefined) shortest = Math.min(shortest, (after.getTime() - before.getTime()) / 1000);
      pairEnd = after.getTime();
      continue;
    }
    // Real time parts from wall time only within the change's size of it: walk every fire there,
    // from the last one before to the first one after.
    const reach = Math.abs(change.toMinutes - change.fromMinutes) * 60_000 + 1000;
    let fire: Date | null | undefined =
      cron.previousRuns(1, new Date(change.at - reach))[0] ?? cron.nextRun(new Date(change.at - reach));
    let previous: Date | undefined;
    // The walk's fires are fixed by the key too when they all lie within the three wall days it names.
    const day = (at: number) => Math.floor((at + offsetMinutes(at, parsed.timezone) * 60_000) / DAY_MS);
    const changeDay = Math.floor((change.at + change.fromMinutes * 60_000) / DAY_MS);
    const near = (at: number) => Math.abs(day(at) - changeDay) <= 1;
    let fixed = true;
    while (fire !== null && fire !== undefined) {
      if (previous !== undefined) shortest = Math.min(shortest, (fire.getTime() - previous.getTime()) / 1000);
      const at = fire.getTime();
      if (!near(at)) fixed = false;
      if (at > change.at + reach) break;
      previous = fire;
      fire = cron.nextRun(fire);
      await slices.step();
    }
    walked.set(key, fixed && fire !== null && fire !== undefined);
  }
  return shortest;
}
