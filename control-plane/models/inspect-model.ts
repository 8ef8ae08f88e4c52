import { Worker } from 'node:worker_threads';
import { FairQueue } from '../../shared/fair-queue.ts';
import { MODEL_PROCESS_NICE } from '../../shared/priority.ts';
import type { Inspection, InspectReply, InspectRequest } from './inspect-model-thread.ts';

export type { Inspection };

const THREAD = new URL('./inspect-model-thread.ts', import.meta.url);

/** Models opened at once by this process, and per organization; an organization's others wait their turn. */
const inspections = new FairQueue({ concurrency: 2, perKey: 1, maxWaitingPerKey: 16 });

/**
 * Opens the model at `file` with ONNX Runtime in a child process (inspect-model-child.ts) and
 * returns its inputs and outputs, or why it could not be opened. The child holds the model's
 * memory and dies with it; one that does not answer within two minutes is killed. Each inspection
 * holds a whole model in a process of its own, so a flood of uploads waits its turn instead of
 * starting as many processes as there are uploads: two at once per control plane, one per
 * organization, organizations taking turns (shared/fair-queue.ts), at MODEL_PROCESS_NICE so that
 * opening a costly model waits while the API and PostgreSQL are served. The processes are started
 * from a thread of their own (inspect-model-thread.ts), never from the event loop. A model of more
 * than `maxNodes` nodes, or with external data, is refused before the runtime sees it. Throws a
 * QueueFullError when `orgId` already has 16 uploads waiting.
 */
export function inspectModel(file: string, orgId: string, maxNodes: number): Promise<Inspection> {
  return inspections.run(orgId, () => inspectAlone(file, maxNodes));
}

interface Starter {
  worker: Worker;
  waiting: Map<number, (inspection: Inspection) => void>;
}

let starter: Starter | null = null;
let nextId = 1;

/** The thread that starts the inspection processes, started at the first upload (and again if it died). */
function starterThread(): Starter {
  if (starter !== null) return starter;
  const worker = new Worker(THREAD, { workerData: { nice: MODEL_PROCESS_NICE } });
  const started: Starter = { worker, waiting: new Map() };
  worker.on('message', ({ id, inspection }: InspectReply) => {
    started.waiting.get(id)?.(inspection);
    started.waiting.delete(id);
    if (started.waiting.size === 0) worker.unref();
  });
  const lost = (why: string) => {
    if (starter === started) starter = null;
    for (const resolve of started.waiting.values()) resolve({ error: `the model could not be inspected: ${why}` });
    started.waiting.clear();
  };
  worker.on('error', (error) => lost(error.message));
  worker.on('exit', () => lost('the inspection thread stopped'));
  // Between uploads it never keeps the process from exiting (inspectAlone refs it while one
  // waits). After the listeners: adding a 'message' listener refs the worker again.
  worker.unref();
  starter = started;
  return started;
}

function inspectAlone(file: string, maxNodes: number): Promise<Inspection> {
  const { worker, waiting } = starterThread();
  const id = nextId++;
  return new Promise((resolve) => {
    if (waiting.size === 0) worker.ref();
    waiting.set(id, resolve);
    worker.postMessage({ id, file, maxNodes } satisfies InspectRequest);
  });
}
