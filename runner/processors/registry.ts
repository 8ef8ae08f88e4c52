/**
 * The processors this runner can run, by name. A processor of the catalog
 * (shared/workflow/processors.ts) that is missing here fails its node with
 * `processor_unavailable` (its failure route applies). Add a processor with one line below.
 */
import { graphMutate } from './graph-mutate.ts';
import { httpRequest } from './http-request.ts';
import { logicCode } from './logic-code.ts';
import { logicSleep } from './logic-sleep.ts';
import { logicSwitch } from './logic-switch.ts';
import { objectPut } from './object-put.ts';
import { onnxRun } from './onnx-run.ts';
import type { Processor } from './processor.ts';
import { threadPost } from './thread-post.ts';

const PROCESSORS: readonly Processor[] = [
  logicCode,
  logicSleep,
  logicSwitch,
  threadPost,
  objectPut,
  graphMutate,
  onnxRun,
  httpRequest,
];

/** Processor name → processor. */
export const processorRegistry: ReadonlyMap<string, Processor> = new Map(
  PROCESSORS.map((processor) => [processor.name, processor]),
);
