/**
 * Model outputs: a ConstantOfShape model asked for 5,000,000 elements (100 MB as JSON), four calls
 * in flight at a time. Outputs past 5 MiB as JSON are refused in the model host before any is
 * built; before that bound each answer was built whole in the control plane.
 */
import type { PressureContext, PressureScenario } from './scenario.ts';
import { constantOfShapeModel } from '../../test/helpers/onnx-models.ts';
import { loops, modelRevisions, runModel, uploadReady } from './models.ts';

const IN_FLIGHT = 4;
const ELEMENTS = 5_000_000;

let revision = '';

export const scenario: PressureScenario = {
  name: `run_model asking for ${ELEMENTS.toLocaleString('en')} outputs, ${IN_FLIGHT} in flight`,
  async prepare(ctx: PressureContext) {
    [revision] = await modelRevisions(ctx.system, ctx.hostile, 1);
    await uploadReady(ctx.system, ctx.hostile, revision, constantOfShapeModel());
    // The model host started and the session loaded before "before" (see model-host.ts).
    const warm = await runModel(ctx.system, ctx.hostile, revision, { S: { type: 'int64', dims: [1], data: [10] } });
    if (warm !== 200) throw new Error(`a first run_model for the scenario: ${warm}`);
  },
  async run(ctx: PressureContext, signal: AbortSignal) {
    const statuses = new Map<number, number>();
    await loops(IN_FLIGHT, signal, async () => {
      const status = await runModel(ctx.system, ctx.hostile, revision, {
        S: { type: 'int64', dims: [1], data: [ELEMENTS] },
      });
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    });
    ctx.log(`model outputs: answers ${JSON.stringify(Object.fromEntries(statuses))}`);
  },
};
