import type { EngineOptions } from '../../runner/engine/engine.ts';
import { runExecution, type EngineContext } from '../../runner/engine/interpreter.ts';
import { createStepWriter } from '../../runner/engine/step-writes.ts';
import type { Processor } from '../../runner/processors/processor.ts';
import { executionLogFields } from '../../shared/tracing/tracing.ts';

/**
 * The engine option for tests that interpret on their own thread with `processors` (to watch or
 * replace one, or to see the interpreter's spans in-process): the same interpreter as an engine
 * thread's, with a step writer on the engine's pool; `logic.code` nodes still run on the engine
 * threads. Production interprets only on the engine threads (runner/engine/engine-thread.ts).
 */
export function onThisThread(processors: ReadonlyMap<string, Processor>): NonNullable<EngineOptions['interpreter']> {
  return (engine) => {
    const { db, runnerId, leaseSeconds, log } = engine;
    const ctx: EngineContext = {
      db,
      queue: engine.boss,
      runnerId,
      writes: createStepWriter(db, { runnerId, leaseSeconds }),
      processors,
      code: engine.code,
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
