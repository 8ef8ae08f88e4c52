/**
 * A hostile tenant names its schedule's time zone in ever new letter cases (`aMeRiCa/nEw_YoRk`):
 * each distinct string once kept an Intl.DateTimeFormat (≈ 30 KB of ICU memory) in the control
 * plane for good. Zones are now canonicalised and the caches bounded in bytes
 * (shared/scheduler/zone-transitions.ts), so the control plane's resident memory stays flat.
 */
import type { PressureContext, PressureScenario } from './scenario.ts';
import { hostileScheduler, post, pressLoops, type HostileScheduler } from './scheduler-fixture.ts';

const ZONES = ['America/New_York', 'Europe/Paris', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Santiago'];

/** The `i`-th letter-case variant of a zone: its letters upper or lower by the bits of `i`. */
function caseVariant(zone: string, i: number): string {
  let bit = 0;
  return zone.replace(/[A-Za-z]/g, (c) => ((i >> (bit++ % 30)) & 1 ? c.toUpperCase() : c.toLowerCase()));
}

let fixture: HostileScheduler | undefined;

export const scenario: PressureScenario = {
  name: 'update_schedule with letter-case variants of time zones',
  async prepare(ctx: PressureContext) {
    fixture = await hostileScheduler(ctx.system, ctx.hostile);
  },
  async run(ctx: PressureContext, signal: AbortSignal) {
    fixture ??= await hostileScheduler(ctx.system, ctx.hostile);
    const { schedulerRevisionId, scheduleId } = fixture;
    let answered = 0;
    await pressLoops(4, signal, async (i) => {
      const zone = caseVariant(ZONES[i % ZONES.length]!, Math.floor(i / ZONES.length) + 1);
      await post(
        ctx.system,
        ctx.hostile,
        `/v1/revisions/${schedulerRevisionId}/update_schedule`,
        { schedule_id: scheduleId, timezone: zone },
        signal,
      );
      if (++answered % 500 === 0) ctx.log(`time zones: ${answered} updates`);
    });
  },
};
