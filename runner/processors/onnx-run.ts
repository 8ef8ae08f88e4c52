import { z } from 'zod';
import { ModelHost } from '../../shared/onnx/model-host.ts';
import { findRunnableModel } from '../../shared/onnx/model-record.ts';
import { s3SettingsFrom } from '../../shared/onnx/s3-settings.ts';
import { inputProblems } from '../../shared/onnx/tensors.ts';
import { tensorSchema, type OnnxRunConfig } from '../../shared/workflow/processors.ts';
import type { NodeResult, Processor, RunContext } from './processor.ts';

/** One model host per engine thread, started by the thread's first model run. */
let host: ModelHost | null = null;

function hostFor(ctx: RunContext): ModelHost {
  host ??= new ModelHost({
    databaseUrl: String(ctx.db.pool.options.connectionString),
    cacheBytes: 256 * 1024 * 1024,
    s3: s3SettingsFrom(process.env),
  });
  return host;
}

const inputsSchema = z.record(z.string().min(1).max(256), tensorSchema);

function fail(code: string, message: string): NodeResult {
  return { kind: 'failure', error: { code, message } };
}

/**
 * `onnx.run {revision_id, inputs?, outputs?}`: runs the model of an ONNX revision of the
 * execution's own organization (another organization's model is not found) on `inputs`, or on the
 * node's input taken as the map of input name → tensor; routes `success` with `{outputs}`. The
 * inputs are checked against the model's recorded inputs first (`invalid_model_input`, naming the
 * input). The run counts against the execution's `workflow.code_run_seconds`, like a code run: a
 * model still running then is stopped (`model_timeout`). Outputs are held to a code node's
 * output bound, 5 MiB as JSON (`output_invalid`, before they are built). Failures take the
 * `failure` route.
 */
export const onnxRun: Processor<OnnxRunConfig> = {
  name: 'onnx.run',
  async run(ctx, config, input) {
    const model = await findRunnableModel(ctx.db, config.revision_id);
    if (model === 'not_found' || (model !== 'no_model' && model.orgId !== ctx.execution.orgId)) {
      return fail('model_not_found', `No ONNX model revision ${config.revision_id} in this organization.`);
    }
    if (model === 'no_model')
      return fail('model_unavailable', `Revision ${config.revision_id} holds no model that opened; upload one.`);
    const parsed = inputsSchema.safeParse(config.inputs ?? input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return fail(
        'invalid_model_input',
        `The node's input must map input names to tensors {type, dims, data}: ${issue.path.join('.') || 'input'}: ${issue.message}`,
      );
    }
    const problems = inputProblems(model.inputs, parsed.data);
    const unknown = (config.outputs ?? []).filter((name) => !model.outputs.some((o) => o.name === name));
    for (const name of unknown) problems.push(`outputs: the model has no output ${JSON.stringify(name)}`);
    if (problems.length > 0) return fail('invalid_model_input', problems.slice(0, 5).join('; '));
    const seconds = ctx.execution.limits['workflow.code_run_seconds'];
    const result = await hostFor(ctx).run(
      ctx.execution.orgId,
      {
        revisionId: model.revisionId,
        sha256: model.sha256,
        inputs: parsed.data,
        ...(config.outputs ? { outputs: config.outputs } : {}),
      },
      seconds * 1000,
    );
    if ('error' in result) {
      const message =
        result.error.code === 'model_timeout'
          ? `${result.error.message} (workflow.code_run_seconds is ${seconds})`
          : result.error.message;
      // Held to a code node's output bound, and failing as a code node's output past it does.
      if (result.error.code === 'output_too_large') return fail('output_invalid', message);
      return fail(result.error.code, message);
    }
    return { kind: 'route', route: 'success', output: { outputs: result.outputs } };
  },
};
