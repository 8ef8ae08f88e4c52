import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** One input or output of a model as ONNX Runtime reports it (`shape` entries: sizes or symbolic names). */
export interface TensorSpec {
  name: string;
  type: string;
  shape: Array<number | string>;
}

export type Inspection = { inputs: TensorSpec[]; outputs: TensorSpec[] } | { error: string };

const CHILD = fileURLToPath(new URL('./inspect-model-child.ts', import.meta.url));
/** Opening a model of 500 MB takes seconds; one that takes longer than this is refused. */
const INSPECT_MS = 120_000;

/**
 * Opens the model at `file` with ONNX Runtime in a child process (inspect-model-child.ts) and
 * returns its inputs and outputs, or why it could not be opened. The child holds the model's
 * memory and dies with it; one that does not answer within two minutes is killed. At most two
 * run at once per process; the others wait.
 */
export async function inspectModel(file: string): Promise<Inspection> {
  // Each inspection holds a whole model in a process of its own: a flood of uploads (one tenant's
  // or many) waits its turn instead of starting as many processes as there are uploads.
  while (inspecting >= MAX_INSPECTIONS) await new Promise<void>((resolve) => waiting.push(resolve));
  inspecting++;
  try {
    return await inspectAlone(file);
  } finally {
    inspecting--;
    waiting.shift()?.();
  }
}

/** Models opened at once by this process. */
const MAX_INSPECTIONS = 2;
let inspecting = 0;
const waiting: Array<() => void> = [];

function inspectAlone(file: string): Promise<Inspection> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, file], { stdio: ['ignore', 'pipe', 'ignore'] });
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
