import { defaultOf } from '../../shared/limits/catalog.ts';
import { writeSessionObject, type ObjectWriteLimits } from '../../shared/session/object-writes.ts';
import type { ExecutionScope, Processor } from './processor.ts';
import type { ObjectPutConfig } from '../../shared/workflow/processors.ts';
import { writeThenPassOn } from './session-write.ts';

/**
 * The limits an execution's object writes are held to: `workflow.session_objects_per_session` as
 * the execution resolved it at creation (docs/workflow.md, "Which limit values apply"), not the
 * value in force now, and the fixed `workflow.session_object_bytes`, which is its catalog value for
 * everyone. The stored run limits keep values only, so `source` is not known here; no refusal
 * shows it (the limit object is `{id, value, held}`).
 */
function executionObjectLimits(execution: ExecutionScope): ObjectWriteLimits {
  return {
    objectsQuota: {
      id: 'workflow.session_objects_per_session',
      value: execution.limits['workflow.session_objects_per_session'],
      source: 'default',
    },
    objectBytes: {
      id: 'workflow.session_object_bytes',
      value: defaultOf('workflow.session_object_bytes'),
      source: 'default',
    },
  };
}

/**
 * `object.put`: writes `value` (or, with `from_input: true`, the node's input) under `alias` in
 * the execution's session through writeSessionObject, the path of `upload_session_object`:
 * `session_object_too_large`, the objects quota for a new alias and a session being deleted take
 * `failure`. Passes its input on.
 */
export const objectPut: Processor<ObjectPutConfig> = {
  name: 'object.put',
  run(ctx, config, input) {
    const value = config.from_input === true ? input : config.value;
    return writeThenPassOn(ctx, input, (tx) =>
      writeSessionObject(
        tx,
        {
          sessionId: ctx.execution.sessionId,
          alias: config.alias,
          value,
          executionId: ctx.execution.id,
          node: ctx.node,
        },
        executionObjectLimits(ctx.execution),
      ),
    );
  },
};
