import type { JsonValue } from '../../sandbox/messages.ts';
import type { CodeTask } from '../messages.ts';
import type { NodeEventAttributes, NodeResult, Processor } from './processor.ts';

/**
 * `logic.code {code}`: runs the module in the sandbox on an engine worker thread (runner/engine/thread-pool.ts)
 * under the limits the execution resolved at creation: `workflow.code_run_seconds` bounds the run
 * (a run stopped there takes `failure` with `code_timeout`, its message naming the limit),
 * `workflow.code_imports` decides imports, `workflow.session_objects_per_session` bounds
 * `ctx.objects.put`. The returned value takes `success`, `ctx.route(name, output)` takes `name`,
 * and any error takes `failure` with the sandbox's `{code, message, limit?}`.
 */
export const logicCode: Processor<{ code: string }> = {
  name: 'logic.code',
  async run(ctx, config, input): Promise<NodeResult> {
    if (!ctx.code)
      return { kind: 'failure', error: { code: 'internal_error', message: 'This runner has no code sandbox.' } };
    const { execution } = ctx;
    const task: CodeTask = {
      type: 'code',
      request: {
        code: config.code,
        // Node inputs are read from jsonb, so they are JSON data.
        input: (input ?? null) as JsonValue,
        imports: execution.limits['workflow.code_imports'],
        timeoutMs: execution.limits['workflow.code_run_seconds'] * 1000,
        ids: { executionId: execution.id, sessionId: execution.sessionId, node: ctx.node },
        // Runs of one organization may share a sandbox context, never runs of two.
        tenant: execution.orgId,
      },
      scope: {
        executionId: execution.id,
        sessionId: execution.sessionId,
        blobId: execution.blobId,
        orgId: execution.orgId,
        node: ctx.node,
        sessionObjectsQuota: execution.limits['workflow.session_objects_per_session'],
      },
    };
    let answer;
    try {
      // A lost lease (cancel, takeover) aborts the signal: the run stops at once and its isolate is freed.
      answer = await ctx.code.run(task, ctx.signal);
    } catch {
      // The worker pool was shut down (drain) or a worker thread died under the run.
      return {
        kind: 'failure',
        error: { code: 'internal_error', message: 'The code sandbox stopped during the run.' },
      };
    }
    const attributes: NodeEventAttributes | undefined =
      answer.logs.length > 0 || answer.logsDropped > 0
        ? { logs: answer.logs, logs_dropped: answer.logsDropped }
        : undefined;
    const { result } = answer;
    const extra = attributes ? { attributes } : {};
    switch (result.kind) {
      case 'output':
        return { kind: 'route', route: 'success', output: result.output, ...extra };
      case 'route':
        return { kind: 'route', route: result.route, output: result.output, ...extra };
      case 'error':
        return { kind: 'failure', error: result.error, ...extra };
    }
  },
};
