/**
 * Slow uploads: 20 Upload Model requests at once, each declaring 1 MB and sending one byte every
 * 2 s; one refused (idle or total bound) or dropped is opened again. Before uploads were spooled to
 * disk, each held a pool connection and the revision's row lock while it trickled, and the API
 * answered 503 to everyone.
 */
import type { ClientRequest } from 'node:http';
import type { PressureContext, PressureScenario } from './scenario.ts';
import { aborted, modelRevisions, openUpload } from './models.ts';

const UPLOADS = 20;
const BYTE_EVERY_MS = 2_000;
const DECLARED = 1_000_000;

let revisions: string[] = [];

export const scenario: PressureScenario = {
  name: `${UPLOADS} model uploads sending a byte every ${BYTE_EVERY_MS / 1000} s`,
  async prepare(ctx: PressureContext) {
    // Two revisions: uploads of one revision would also queue on its row lock at the end.
    revisions = await modelRevisions(ctx.system, ctx.hostile, 2);
  },
  async run(ctx: PressureContext, signal: AbortSignal) {
    const open = new Set<ClientRequest>();
    let reopened = 0;
    const start = (i: number) => {
      if (signal.aborted) return;
      const req = openUpload(ctx.system, ctx.hostile, revisions[i % revisions.length]!, DECLARED, () => {
        open.delete(req);
        if (!signal.aborted) {
          reopened++;
          start(i);
        }
      });
      req.write(Buffer.alloc(1));
      open.add(req);
    };
    for (let i = 0; i < UPLOADS; i++) start(i);
    const trickle = setInterval(() => {
      for (const req of open) if (!req.destroyed) req.write(Buffer.alloc(1));
    }, BYTE_EVERY_MS);
    await aborted(signal);
    clearInterval(trickle);
    for (const req of open) req.destroy();
    ctx.log(`slow uploads: ${reopened} refused or dropped and opened again`);
  },
};
