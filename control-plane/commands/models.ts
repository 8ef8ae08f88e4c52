import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { findRunnableModel } from '../../shared/onnx/model-record.ts';
import { inputProblems } from '../../shared/onnx/tensors.ts';
import { tensorSchema } from '../../shared/workflow/processors.ts';
import { requireEntitlement } from '../limits/entitlement.ts';
import { defineCommand } from './command.ts';

/** How long one `run_model` may run (docs/blob-types.md "Running a model"). */
const RUN_MODEL_SECONDS = 30;

/**
 * `run_model {inputs, outputs?}` on an ONNX revision → `outputs` (name → tensor). The inputs are
 * checked against the model's recorded inputs first (400 naming the input and the mismatch); the
 * run happens in the control plane's model host (a child process), in the organization's turn,
 * stopped after RUN_MODEL_SECONDS (400 `model_timeout`); outputs past MODEL_OUTPUT_BYTES as JSON
 * are refused there, before they are built (400 `model_run_failed`).
 */
const runModel = defineCommand({
  name: 'run_model',
  result: z.strictObject({
    outputs: z.record(z.string(), tensorSchema).meta({ description: 'Output name → tensor `{type, dims, data}`.' }),
  }),
  blobTypes: ['svc.model.onnx'],
  role: 'read',
  params: z.strictObject({
    inputs: z.record(z.string().min(1).max(256), tensorSchema),
    outputs: z.array(z.string().min(1).max(256)).min(1).max(64).optional(),
  }),
  async handler(ctx, _principal, params, call) {
    const { blob, revision } = call.revision;
    await requireEntitlement(ctx.db, blob.id, 'onnx.enabled');
    const model = await findRunnableModel(ctx.db, revision.id);
    if (typeof model === 'string')
      throw new ServiceError('conflict', 'This revision holds no model that opened; upload one first.');
    const problems = inputProblems(model.inputs, params.inputs);
    const unknown = (params.outputs ?? []).filter((name) => !model.outputs.some((o) => o.name === name));
    for (const name of unknown)
      problems.push(
        `outputs: the model has no output ${JSON.stringify(name)} (its outputs: ${model.outputs.map((o) => o.name).join(', ')})`,
      );
    if (problems.length > 0)
      throw new ServiceError('invalid_request_body', `Invalid params: ${problems.slice(0, 5).join('; ')}`);
    const result = await ctx.models.run(
      blob.org_id,
      {
        revisionId: revision.id,
        sha256: model.sha256,
        inputs: params.inputs,
        ...(params.outputs ? { outputs: params.outputs } : {}),
      },
      RUN_MODEL_SECONDS * 1000,
    );
    if ('error' in result) {
      if (result.error.code === 'model_timeout') throw new ServiceError('model_timeout', result.error.message);
      if (result.error.code === 'model_unavailable') throw new ServiceError('conflict', result.error.message);
      if (result.error.code === 'model_busy') throw new ServiceError('rate_limited', result.error.message);
      if (result.error.code === 'output_too_large') throw new ServiceError('model_run_failed', result.error.message);
      throw new ServiceError('model_run_failed', `ONNX Runtime failed to run the model: ${result.error.message}`);
    }
    return { outputs: result.outputs };
  },
});

export const modelCommands = [runModel] as const;
