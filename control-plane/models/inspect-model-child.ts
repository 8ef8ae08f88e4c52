/**
 * Opens one ONNX file with ONNX Runtime in a process of its own and prints what it found as one
 * JSON line: `{"inputs": [...], "outputs": [...]}` or `{"error": "..."}`. The control plane runs
 * it for every upload (control-plane/models/inspect-model.ts), so a model's memory — as large as
 * the model — and a crash of the runtime on a hostile file are this process's, not the API's.
 *
 *   node control-plane/models/inspect-model-child.ts FILE
 */
import ort from 'onnxruntime-node';

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

const file = process.argv[2];
try {
  if (!file) throw new Error('no file given');
  const session = await ort.InferenceSession.create(file, {
    graphOptimizationLevel: 'disabled',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  process.stdout.write(
    `${JSON.stringify({ inputs: specs(session.inputMetadata), outputs: specs(session.outputMetadata) })}\n`,
  );
  await session.release();
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: String((error as Error)?.message ?? error).slice(0, 1000) })}\n`);
}
