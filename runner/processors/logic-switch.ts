import type { SwitchConfig } from '../../shared/workflow/processors.ts';
import { switchRoute } from '../../shared/workflow/switch.ts';
import type { Processor } from './processor.ts';

/**
 * `logic.switch`: takes the route of the first case whose conditions hold on the input, else the
 * default route, and passes the input on. The evaluator is shared with the tests and the docs.
 */
export const logicSwitch: Processor<SwitchConfig> = {
  name: 'logic.switch',
  async run(_ctx, config, input) {
    return { kind: 'route', route: switchRoute(config, input), output: input };
  },
};
