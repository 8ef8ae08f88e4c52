/**
 * When a time zone's clocks change (DST), from the platform's time-zone database through Intl:
 * the instants its UTC offset changes, with the offsets before and after. The scheduler's
 * shortest-gap computation walks croner's fires around each (shared/scheduler/cron.ts).
 */

/** One clock change: at `at` (epoch ms) the offset goes from `fromMinutes` to `toMinutes`. */
export interface ZoneTransition {
  at: number;
  fromMinutes: number;
  toMinutes: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** The zone's UTC offset at `ms`, in minutes east of UTC. */
export function offsetMinutes(ms: number, zone: string): number {
  let format = formats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    formats.set(zone, format);
  }
  const name = format.formatToParts(ms).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const match = /^GMT([+-])(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(name);
  if (match === null) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3]) + Number(match[4] ?? 0) / 60;
  return match[1] === '-' ? -minutes : minutes;
}

// Clock changes are at least four weeks apart in every rule in force (Morocco's pause for
// Ramadan is the shortest); a two-week step finds each, then bisection finds its second.
const STEP_MS = 14 * 86_400_000;
const cache = new Map<string, { from: number; years: number; list: ZoneTransition[] }>();
const DAY_MS = 86_400_000;

/** The zone's clock changes from `fromMs` for `years` years (computed once a day per zone). */
export function transitionsOf(zone: string, fromMs: number, years: number): ZoneTransition[] {
  const hit = cache.get(zone);
  if (hit !== undefined && hit.years >= years && fromMs - hit.from < DAY_MS && fromMs >= hit.from) return hit.list;
  const list: ZoneTransition[] = [];
  const end = fromMs + years * 365.25 * DAY_MS;
  let at = fromMs;
  let offset = offsetMinutes(at, zone);
  while (at < end) {
    const next = at + STEP_MS;
    const nextOffset = offsetMinutes(next, zone);
    if (nextOffset !== offset) {
      let lo = at;
      let hi = next;
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (offsetMinutes(mid, zone) === offset) lo = mid;
        else hi = mid;
      }
      list.push({ at: hi, fromMinutes: offset, toMinutes: nextOffset });
    }
    at = next;
    offset = nextOffset;
  }
  if (cache.size >= 500) cache.clear();
  cache.set(zone, { from: fromMs, years, list });
  return list;
}
