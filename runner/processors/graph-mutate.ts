import { graphMutationCeilings, graphMutationsSchema, mutateGraph } from '../../shared/graph/mutations.ts';
import { parseInput } from '../../shared/validate.ts';
import type { Processor } from './processor.ts';
import type { GraphMutateConfig } from '../../shared/workflow/processors.ts';
import { writeThenPassOn } from './session-write.ts';

/**
 * `graph.mutate`: applies `mutations` (or, with `from_input: true`, the node's input taken as the
 * mutations array) to the execution's session graph through mutateGraph, the path of
 * `mutate_session_graph`. The catalog checks only each mutation's `op`; the rest is checked here
 * by the command's own schema (`invalid_request_body`), then by mutateGraph's ceilings
 * (`graph_mutation_too_large`, `graph_element_too_large`) and conflicts, each taking `failure`.
 * All mutations or none. Passes its input on.
 */
export const graphMutate: Processor<GraphMutateConfig> = {
  name: 'graph.mutate',
  run(ctx, config, input) {
    return writeThenPassOn(ctx, input, async (tx) => {
      const mutations = parseInput(
        graphMutationsSchema,
        config.from_input === true ? input : config.mutations,
        'mutations',
      );
      const ceilings = { ...(await graphMutationCeilings(tx, ctx.execution.blobId)), stored: ctx.graphBounds };
      await mutateGraph(tx, ctx.execution.sessionId, mutations, ceilings, {
        executionId: ctx.execution.id,
        node: ctx.node,
      });
    });
  },
};
