/**
 * Model inspection and the model host: the hostile tenant uploads models that are costly to open
 * (200,000 nodes in a few MB, refused by MODEL_MAX_NODES before ONNX Runtime sees them, and
 * 40,000 nodes, just under it, which the runtime opens) two at a time, while eight heavy run_model
 * calls (MatMul chains of ~0.5 s each) are in flight. Openings and runs are taken in turns per
 * organization, so the quiet tenant's requests wait for at most one of each.
 */
import type { PressureContext, PressureScenario } from './scenario.ts';
import { chainModel, heavyModel } from '../../test/helpers/onnx-models.ts';
import { loops, modelRevisions, runModel, upload, uploadReady } from './models.ts';

const UPLOADS_IN_FLIGHT = 2;
const RUNS_IN_FLIGHT = 8;

let uploadRevisions: string[] = [];
let heavyRevision = '';
let huge: Buffer = Buffer.alloc(0);
let large: Buffer = Buffer.alloc(0);

export const scenario: PressureScenario = {
  name: `uploads of 200,000- and 40,000-node models (${UPLOADS_IN_FLIGHT} at a time) and ${RUNS_IN_FLIGHT} heavy run_model in flight`,
  async prepare(ctx: PressureContext) {
    const revisions = await modelRevisions(ctx.system, ctx.hostile, UPLOADS_IN_FLIGHT + 1);
    heavyRevision = revisions[0]!;
    uploadRevisions = revisions.slice(1);
    await uploadReady(ctx.system, ctx.hostile, heavyRevision, heavyModel(64, 512));
    // The model host started and the heavy session loaded before "before": the row's growth is what
    // the runs and uploads leave, not the host's own start (a process of ONNX Runtime, once).
    const warm = await runModel(ctx.system, ctx.hostile, heavyRevision, {
      X: { type: 'float32', dims: [1], data: [0] },
    });
    if (warm !== 200) throw new Error(`a first run_model for the scenario: ${warm}`);
    huge = chainModel(200_000);
    large = chainModel(40_000);
    ctx.log(`model host: models of ${(huge.length / 1e6).toFixed(1)} and ${(large.length / 1e6).toFixed(1)} MB`);
  },
  async run(ctx: PressureContext, signal: AbortSignal) {
    const uploads = new Map<number, number>();
    const runs = new Map<number, number>();
    let turn = 0;
    await Promise.all([
      Promise.all(
        uploadRevisions.map((rev) =>
          loops(1, signal, async () => {
            const status = await upload(ctx.system, ctx.hostile, rev, turn++ % 2 === 0 ? huge : large);
            uploads.set(status, (uploads.get(status) ?? 0) + 1);
          }),
        ),
      ),
      loops(RUNS_IN_FLIGHT, signal, async () => {
        const status = await runModel(ctx.system, ctx.hostile, heavyRevision, {
          X: { type: 'float32', dims: [1], data: [0] },
        });
        runs.set(status, (runs.get(status) ?? 0) + 1);
      }),
    ]);
    ctx.log(
      `model host: uploads ${JSON.stringify(Object.fromEntries(uploads))}, runs ${JSON.stringify(Object.fromEntries(runs))}`,
    );
  },
};
