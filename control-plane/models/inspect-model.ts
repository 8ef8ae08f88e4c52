import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FairQueue } from '../../shared/fair-queue.ts';
import type { TensorSpec } from '../../shared/onnx/tensors.ts';
import { MODEL_PROCESS_NICE } from '../../shared/priority.ts';

export type Inspection = { inputs: TensorSpec[]; outputs: TensorSpec[] } | { error: string };

const CHILD = fileURLToPath(new URL('./inspect-model-child.ts', import.meta.url));
/** Opening a model of 500 MB takes seconds; one that takes longer than this is refused. */
const INSPECT_MS = 120_000;

/** Models opened at once by this process, and per organization; an organization's others wait their turn. */
const inspections = new FairQueue({ concurrency: 2, perKey: 1, maxWaitingPerKey: 16 });

/**
 * Opens the model at `file` with ONNX Runtime in a child process (inspect-model-child.ts) and
 * returns its inputs and outputs, or why it could not be opened. The child holds the model's
 * memory and dies with it; one that does not answer within two minutes is killed. Each inspection
 * holds a whole model in a process of its own, so a flood of uploads waits its turn instead of
 * starting as many processes as there are uploads: two at once per control plane, one per
 * organization, organizations taking turns (shared/fair-queue.ts), at MODEL_PROCESS_NICE so that
 * opening a costly model waits while the API and PostgreSQL are served. A model of more than `maxNodes`
 * nodes, or with external data, is refused before the runtime sees it. Throws a QueueFullError
 * when `orgId` already has 16 uploads waiting.
 */
export function inspectModel(file: string, orgId: string, maxNodes: number): Promise<Inspection> {
  return inspections.run(orgId, () => inspectAlone(file, maxNodes));
}

function inspectAlone(file: string, maxNodes: number): Promise<Inspection> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, file, String(maxNodes), String(MODEL_PROCESS_NICE)], {
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
