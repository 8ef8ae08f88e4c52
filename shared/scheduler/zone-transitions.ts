/**
 * When a time zone's clocks change (DST), from the platform's time-zone database through Intl:
 * the instants its UTC offset changes, with the offsets before and after. The scheduler's
 * shortest-gap computation walks croner's fires around each (shared/scheduler/cron.ts).
 *
 * Zones are read by their canonical name only (canonicalZone), so `america/NEW_york` and
 * `America/New_York` share one entry, and both caches are bounded in bytes: a client choosing
 * zone names cannot grow the process.
 */
import { ByteBoundedCache } from '../byte-bounded-cache.ts';

/** One clock change: at `at` (epoch ms) the offset goes from `fromMinutes` to `toMinutes`. */
export interface ZoneTransition {
  at: number;
  fromMinutes: number;
  toMinutes: number;
}

/**
 * Lower-case name → canonical name, of every zone the platform knows by its canonical name, and
 * of the aliases (`us/eastern`, `etc/utc`) met so far. Built on first use from
 * Intl.supportedValuesOf: asking Intl to resolve a name builds an Intl.DateTimeFormat (≈ 1 ms of
 * CPU and ICU memory for the collector), which a client sending letter-case variants of zone
 * names once made the control plane do for every request. Aliases are added as Intl resolves
 * them: the platform's database holds a few hundred, and MAX_ALIASES bounds the table whatever
 * Intl accepts.
 */
let zoneNames: Map<string, string> | undefined;
let aliases = 0;
const MAX_ALIASES = 2048;

function knownZones(): Map<string, string> {
  if (zoneNames === undefined) {
    zoneNames = new Map();
    // UTC is a zone Intl resolves names to (`Etc/UTC`, `GMT`, `Zulu`) but does not list.
    for (const zone of [...Intl.supportedValuesOf('timeZone'), 'UTC']) zoneNames.set(zone.toLowerCase(), zone);
  }
  return zoneNames;
}

/**
 * The platform's canonical name of a time zone (`America/New_York` for `america/new_york`, `UTC`
 * for `Etc/UTC`), or undefined when the platform knows no such zone. Zone names are matched
 * without regard to case (as Intl matches them), so every letter-case variant of a name is one
 * look-up in a table (knownZones), not an Intl object of its own.
 */
export function canonicalZone(name: string): string | undefined {
  const table = knownZones();
  const key = name.toLowerCase();
  const known = table.get(key);
  if (known !== undefined) return known;
  let canonical: string;
  try {
    canonical = new Intl.DateTimeFormat('en', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
  if (aliases < MAX_ALIASES) {
    aliases += 1;
    table.set(key, canonical);
  }
  return canonical;
}

// An Intl.DateTimeFormat keeps ≈ 30 KB of ICU data alive (measured: 2,000 of them, 331 MiB of
// resident memory with what they pulled in); 4 MiB keeps the zones in use, not every zone named.
const FORMAT_BYTES = 32 * 1024;
const formats = new ByteBoundedCache<Intl.DateTimeFormat>(4 * 1024 * 1024);

/** The zone's UTC offset at `ms`, in minutes east of UTC (`zone` canonical: see canonicalZone). */
export function offsetMinutes(ms: number, zone: string): number {
  let format = formats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    formats.set(zone, format, FORMAT_BYTES);
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
// A transition is three numbers in an object (≈ 64 bytes); a zone's 28 years hold at most ~60.
const TRANSITION_BYTES = 64;
const cache = new ByteBoundedCache<{ from: number; years: number; list: ZoneTransition[] }>(1024 * 1024);
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
  cache.set(zone, { from: fromMs, years, list }, 64 + list.length * TRANSITION_BYTES);
  return list;
}
