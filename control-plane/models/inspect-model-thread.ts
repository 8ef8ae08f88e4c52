/**
 * The thread that starts the upload inspection processes (inspect-model-child.ts) for
 * inspect-model.ts. A thread of its own for two reasons. Starting a process blocks the thread that
 * starts it until the new process has become Node (libuv forks, then waits for the exec): on a busy
 * host tens of milliseconds, which on the API's event loop every tenant's requests waited for at
 * every upload. And a process starts at the nice value of the thread that started it: this thread
 * runs at MODEL_PROCESS_NICE, so Node's start and ONNX Runtime's loading in the new process (about
 * half a second of CPU per upload) already wait while the API and PostgreSQL are served, instead
 * of running at the API's priority until the process lowers its own.
 *
 * Messages: `{ id, file, maxNodes }` in, `{ id, inspection }` out, one per request.
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import type { TensorSpec } from '../../shared/onnx/tensors.ts';

/** What an inspection found: the model's inputs and outputs, or why it could not be opened. */
export type Inspection = { inputs: TensorSpec[]; outputs: TensorSpec[] } | { error: string };

export interface InspectRequest {
  id: number;
  file: string;
  maxNodes: number;
}

export interface InspectReply {
  id: number;
  inspection: Inspection;
}

const CHILD = fileURLToPath(new URL('./inspect-model-child.ts', import.meta.url));
/** Opening a model of 500 MB takes seconds; one that takes longer than this is refused. */
const INSPECT_MS = 120_000;

const { nice } = workerData as { nice: number };
// Linux keeps a nice value per thread and setpriority(0) names the calling thread, this one only;
// elsewhere it would lower the whole control plane's priority, so there the child lowers its own.
if (process.platform === 'linux' && nice > 0) setPriority(0, nice);

function inspect(file: string, maxNodes: number): Promise<Inspection> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, file, String(maxNodes), String(nice)], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      if (out.length < 1_000_000) out += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), INSPECT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ error: `the model could not be inspected: ${error.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      try {
        const parsed = JSON.parse(out.trim().split('\n').at(-1) ?? '') as Inspection;
        if (parsed && typeof parsed === 'object') return resolve(parsed);
      } catch {
        // Fall through: the child died before it answered.
      }
      resolve({
        error:
          signal === 'SIGKILL'
            ? `ONNX Runtime did not open the model within ${INSPECT_MS / 1000} s`
            : `ONNX Runtime stopped while opening the model (exit ${code ?? signal})`,
      });
    });
  });
}

parentPort!.on('message', ({ id, file, maxNodes }: InspectRequest) => {
  void inspect(file, maxNodes).then((inspection) => parentPort!.postMessage({ id, inspection } satisfies InspectReply));
});
