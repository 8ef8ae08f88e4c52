/**
 * Small ONNX models the tests build themselves (onnx-proto's compiled ModelProto, no downloaded
 * files): `addModel` (C = A + B, float32 vectors of any length) and `mlpModel` (a two-layer
 * perceptron, Y = relu(X·W1 + B1)·W2 + B2, with known weights so outputs can be checked
 * numerically), plus `mlpReference` computing the same in JavaScript.
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;
const FLOAT = onnx.TensorProto.DataType.FLOAT;

function valueInfo(name: string, dims: Array<number | string>) {
  return onnx.ValueInfoProto.create({
    name,
    type: onnx.TypeProto.create({
      tensorType: onnx.TypeProto.Tensor.create({
        elemType: FLOAT,
        shape: onnx.TensorShapeProto.create({
          dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        }),
      }),
    }),
  });
}

function tensor(name: string, dims: number[], values: number[]) {
  return onnx.TensorProto.create({ name, dims, dataType: FLOAT, floatData: values });
}

function model(graph: InstanceType<typeof onnx.GraphProto>): Buffer {
  const proto = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'workspace-service tests',
    opsetImport: [{ domain: '', version: 13 }],
    graph,
  });
  return Buffer.from(onnx.ModelProto.encode(proto).finish());
}

/** C = A + B over float32 vectors of length N (symbolic). */
export function addModel(): Buffer {
  return model(
    onnx.GraphProto.create({
      name: 'add',
      node: [onnx.NodeProto.create({ opType: 'Add', input: ['A', 'B'], output: ['C'] })],
      input: [valueInfo('A', ['N']), valueInfo('B', ['N'])],
      output: [valueInfo('C', ['N'])],
    }),
  );
}

/** A graph with an operator no runtime knows: valid protobuf, unopenable model. */
export function unsupportedModel(): Buffer {
  return model(
    onnx.GraphProto.create({
      name: 'unsupported',
      node: [onnx.NodeProto.create({ opType: 'NoSuchOperatorAnywhere', input: ['A'], output: ['C'] })],
      input: [valueInfo('A', [2])],
      output: [valueInfo('C', [2])],
    }),
  );
}

const MLP = {
  inputs: 4,
  hidden: 8,
  outputs: 2,
  w1: Array.from({ length: 32 }, (_, i) => ((i % 7) - 3) / 10),
  b1: Array.from({ length: 8 }, (_, i) => (i - 4) / 20),
  w2: Array.from({ length: 16 }, (_, i) => ((i % 5) - 2) / 5),
  b2: [0.5, -0.25],
};

/** Y[batch, 2] = relu(X[batch, 4] · W1 + B1) · W2 + B2. */
export function mlpModel(): Buffer {
  return model(
    onnx.GraphProto.create({
      name: 'mlp',
      node: [
        onnx.NodeProto.create({ opType: 'MatMul', input: ['X', 'W1'], output: ['H0'] }),
        onnx.NodeProto.create({ opType: 'Add', input: ['H0', 'B1'], output: ['H1'] }),
        onnx.NodeProto.create({ opType: 'Relu', input: ['H1'], output: ['H2'] }),
        onnx.NodeProto.create({ opType: 'MatMul', input: ['H2', 'W2'], output: ['Y0'] }),
        onnx.NodeProto.create({ opType: 'Add', input: ['Y0', 'B2'], output: ['Y'] }),
      ],
      initializer: [
        tensor('W1', [MLP.inputs, MLP.hidden], MLP.w1),
        tensor('B1', [MLP.hidden], MLP.b1),
        tensor('W2', [MLP.hidden, MLP.outputs], MLP.w2),
        tensor('B2', [MLP.outputs], MLP.b2),
      ],
      input: [valueInfo('X', ['batch', MLP.inputs])],
      output: [valueInfo('Y', ['batch', MLP.outputs])],
    }),
  );
}

/** The MLP in JavaScript, row by row (float64; compare with a tolerance). */
export function mlpReference(x: number[][]): number[][] {
  return x.map((row) => {
    const hidden = Array.from({ length: MLP.hidden }, (_, j) =>
      Math.max(0, row.reduce((sum, v, i) => sum + v * MLP.w1[i * MLP.hidden + j]!, 0) + MLP.b1[j]!),
    );
    return Array.from(
      { length: MLP.outputs },
      (_, k) => hidden.reduce((sum, v, j) => sum + v * MLP.w2[j * MLP.outputs + k]!, 0) + MLP.b2[k]!,
    );
  });
}
