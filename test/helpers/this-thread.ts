import type { Test } from 'tap';
import { sandboxCodeRunner } from '../../runner/code-host.ts';
import type { EngineOptions } from '../../runner/engine/engine.ts';
import { runExecution, type EngineContext } from '../../runner/engine/interpreter.ts';
import { createStepWriter } from '../../runner/engine/step-writes.ts';
import type { Processor } from '../../runner/processors/processor.ts';
import { executionLogFields } from '../../shared/tracing/tracing.ts';
import { ProcessSandbox } from '../../sandbox/sandbox-process.ts';
import { createOutsideCalls } from '../../runner/outside/outside-calls.ts';

/**
 * The engine option for tests that interpret on their own thread with `processors` (to watch or
 * replace one, or to see the interpreter's spans in-process): the same interpreter as an engine
 * thread's, with a step writer on the engine's pool, and `logic.code` nodes run in a sandbox of
 * this thread's own (disposed at `t`'s teardown), as an engine thread runs them in its own.
 * Production interprets only on the engine threads (runner/engine/engine-thread.ts).
 */
export function onThisThread(
  t: Test,
  processors: ReadonlyMap<string, Processor>,
): NonNullable<EngineOptions['interpreter']> {
  return (engine) => {
    const { db, runnerId, leaseSeconds, log } = engine;
    const sandbox = new ProcessSandbox({ pool: { size: 2 } });
    t.teardown(() => sandbox.dispose());
    const outside = engine.outside ? createOutsideCalls(db, engine.outside) : undefined;
    const code = sandboxCodeRunner(
      db,
      sandbox,
      engine.graphBounds,
      (err) => log.warn({ err, runner_id: runnerId }, 'a logic.code host call failed'),
      outside,
    );
    const ctx: EngineContext = {
      db,
      queue: engine.boss,
      runnerId,
      writes: createStepWriter(db, { runnerId, leaseSeconds }),
      processors,
      code,
      outside,
      graphBounds: engine.graphBounds,
      nodeRunValueBytes: engine.nodeRunValueBytes,
      leaseSeconds,
      maxRecoveries: engine.maxRecoveries,
      onParked: engine.onParked,
      onProcessorError: (err, node, execution) =>
        log.error(
          { err, node, ...executionLogFields(execution), runner_id: runnerId },
          'processor failed unexpectedly',
        ),
      tracing: engine.tracing,
    };
    return async (execution, control) => ({ outcome: await runExecution(ctx, execution, control) });
  };
}
