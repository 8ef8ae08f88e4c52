/**
 * A hostile tenant creates and updates schedules whose expressions are costly to check: every
 * second in a zone with clock changes (`* * * * * *` in America/New_York took 2.5–4.1 s of the
 * control plane's event loop to refuse), and expressions just above the floor that vary so that
 * no cached gap answers them. Now the floor refuses the first at once and the rest are checked in
 * slices that give the event loop a turn every 2 ms (shared/scheduler/cron.ts).
 */
import type { PressureContext, PressureScenario } from './scenario.ts';
import { hostileScheduler, post, pressLoops, type HostileScheduler } from './scheduler-fixture.ts';

const ZONES = ['America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'America/Santiago'];

/** The `i`-th expression: every second (refused), or every minute on a varying set of days (checked in full). */
function expression(i: number): string {
  if (i % 2 === 0) return '* * * * * *';
  const days = [1 + (i % 28), 1 + ((i >> 5) % 28)].filter((d, k, all) => all.indexOf(d) === k).join(',');
  return `${i % 60} * * ${days} * *`;
}

let fixture: HostileScheduler | undefined;

export const scenario: PressureScenario = {
  name: 'cron checks: * * * * * * and varied expressions in zones with clock changes',
  async prepare(ctx: PressureContext) {
    fixture = await hostileScheduler(ctx.system, ctx.hostile);
  },
  async run(ctx: PressureContext, signal: AbortSignal) {
    fixture ??= await hostileScheduler(ctx.system, ctx.hostile);
    const { schedulerRevisionId, scheduleId, target } = fixture;
    let answered = 0;
    await pressLoops(4, signal, async (i) => {
      const cron = expression(i);
      const timezone = ZONES[i % ZONES.length]!;
      // Creates are refused by the floor or past the schedule quota (each refusal a full check);
      // updates of the one schedule change its expression for real.
      const [name, body] =
        i % 3 === 0
          ? ['create_schedule', { cron, timezone, target, enabled: false }]
          : ['update_schedule', { schedule_id: scheduleId, cron, timezone }];
      await post(ctx.system, ctx.hostile, `/v1/revisions/${schedulerRevisionId}/${name}`, body, signal);
      if (++answered % 500 === 0) ctx.log(`cron checks: ${answered} requests`);
    });
  },
};
