import { postThreadItem, threadItemLimits } from '../../shared/session/thread-writes.ts';
import type { Processor } from './processor.ts';
import type { ThreadPostConfig } from '../../shared/workflow/processors.ts';
import { writeThenPassOn } from './session-write.ts';

/**
 * `thread.post`: posts one item to a thread of the execution's session through postThreadItem,
 * the path of `post_session_thread_item`, so `too_many_files`, `thread_item_too_large`, unknown
 * files and a session being deleted are refused alike (and take `failure` here). When the config
 * sets neither `text` nor `data`, the node's input is posted as `data`. Passes its input on.
 */
export const threadPost: Processor<ThreadPostConfig> = {
  name: 'thread.post',
  run(ctx, config, input) {
    // Presence, as the catalog's schemas judge it: `"data": null` is set (to nothing).
    const dataSet = Object.hasOwn(config, 'data');
    const data = config.text === undefined && !dataSet ? input : config.data;
    return writeThenPassOn(ctx, input, async (tx) => {
      // Both ceilings are fixed, so these are the values an API call gets too.
      const limits = await threadItemLimits(tx, ctx.execution.blobId);
      await postThreadItem(
        tx,
        {
          sessionId: ctx.execution.sessionId,
          thread: config.thread,
          text: config.text,
          data,
          files: config.files,
          authorId: null,
          executionId: ctx.execution.id,
          node: ctx.node,
        },
        limits,
      );
    });
  },
};
