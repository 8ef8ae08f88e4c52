import type { Processor } from './processor.ts';

/**
 * `logic.sleep {seconds}`: asks the interpreter to park the execution for `seconds` and then take
 * `success` with the input unchanged. The ceilings (`workflow.sleep_seconds`, the execution's
 * deadline) and the parking itself are the interpreter's: a sleep holds no runner and no thread.
 */
export const logicSleep: Processor<{ seconds: number }> = {
  name: 'logic.sleep',
  async run(_ctx, config, input) {
    return { kind: 'sleep', seconds: config.seconds, output: input };
  },
};
