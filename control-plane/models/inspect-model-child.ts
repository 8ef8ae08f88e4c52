/**
 * Opens one ONNX file with ONNX Runtime in a process of its own and prints what it found as one
 * JSON line: `{"inputs": [...], "outputs": [...]}` or `{"error": "..."}`. The control plane runs
 * it for every upload (control-plane/models/inspect-model.ts), so a model's memory — as large as
 * the model — and a crash of the runtime on a hostile file are this process's, not the API's.
 *
 * Before the runtime sees the bytes, shared/onnx/model-scan.ts refuses a graph of more than
 * MAX_NODES nodes and any tensor with external data; the runtime is then given the bytes, not the
 * file's name, and its messages lose every path (shared/onnx/runtime-messages.ts).
 *
 *   node control-plane/models/inspect-model-child.ts FILE MAX_NODES [NICE]
 */
import { readFile } from 'node:fs/promises';
import ort from 'onnxruntime-node';
import { scanModel } from '../../shared/onnx/model-scan.ts';
import { runtimeReason } from '../../shared/onnx/runtime-messages.ts';
import { yieldCpu } from '../../shared/priority.ts';

// Before the runtime opens the model: its threads inherit the main thread's nice value.
const nice = Number(process.argv[4]);
if (Number.isInteger(nice) && nice > 0) yieldCpu(nice);

interface TensorSpec {
  name: string;
  type: string;
  shape: Array<number | string>;
}

function specs(metadata: readonly ort.InferenceSession.ValueMetadata[]): TensorSpec[] {
  return metadata.map((m) =>
    m.isTensor ? { name: m.name, type: m.type, shape: [...m.shape] } : { name: m.name, type: 'non-tensor', shape: [] },
  );
}

const [file, maxNodes] = [process.argv[2], Number(process.argv[3])];
try {
  if (!file || !(maxNodes > 0)) throw new Error('no file or node bound given');
  const bytes = await readFile(file);
  const scan = scanModel(bytes, maxNodes);
  if ('refused' in scan) {
    process.stdout.write(
      `${JSON.stringify({ error: `the model was refused before it was opened: ${scan.refused}` })}\n`,
    );
  } else {
    const session = await ort.InferenceSession.create(bytes, {
      graphOptimizationLevel: 'disabled',
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
    });
    process.stdout.write(
      `${JSON.stringify({ inputs: specs(session.inputMetadata), outputs: specs(session.outputMetadata) })}\n`,
    );
    await session.release();
  }
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: runtimeReason(String((error as Error)?.message ?? error)) })}\n`);
}
