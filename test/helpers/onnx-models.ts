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

const INT64 = onnx.TensorProto.DataType.INT64;

/** Y = a float32 tensor of zeros shaped by the int64 input S (ConstantOfShape): outputs as large as asked. */
export function constantOfShapeModel(): Buffer {
  return model(
    onnx.GraphProto.create({
      name: 'zeros',
      node: [onnx.NodeProto.create({ opType: 'ConstantOfShape', input: ['S'], output: ['Y'] })],
      input: [
        onnx.ValueInfoProto.create({
          name: 'S',
          type: { tensorType: { elemType: INT64, shape: { dim: [{ dimValue: 1 }] } } },
        }),
      ],
      output: [valueInfo('Y', ['n'])],
    }),
  );
}

/** Y = X through a chain of `nodes` Identity nodes; `inSubgraph` puts the chain in an If's branches. */
export function chainModel(nodes: number, options: { inSubgraph?: boolean } = {}): Buffer {
  const chain = (prefix: string, from: string, to: string) =>
    Array.from({ length: nodes }, (_, i) =>
      onnx.NodeProto.create({
        opType: 'Identity',
        input: [i === 0 ? from : `${prefix}${i - 1}`],
        output: [i === nodes - 1 ? to : `${prefix}${i}`],
      }),
    );
  if (!options.inSubgraph)
    return model(
      onnx.GraphProto.create({
        name: 'chain',
        node: chain('h', 'X', 'Y'),
        input: [valueInfo('X', ['n'])],
        output: [valueInfo('Y', ['n'])],
      }),
    );
  return model(
    ifModel((name) =>
      onnx.GraphProto.create({
        name,
        node: chain(`${name}_`, 'X', `${name}_out`),
        output: [valueInfo(`${name}_out`, ['n'])],
      }),
    ),
  );
}

/** A graph whose If node takes `branch('then')` or `branch('else')` on the bool input C; Y is the branch's output. */
function ifModel(branch: (name: string) => InstanceType<typeof onnx.GraphProto>): InstanceType<typeof onnx.GraphProto> {
  return onnx.GraphProto.create({
    name: 'if',
    node: [
      onnx.NodeProto.create({
        opType: 'If',
        input: ['C'],
        output: ['Y'],
        attribute: [
          { name: 'then_branch', type: onnx.AttributeProto.AttributeType.GRAPH, g: branch('then') },
          { name: 'else_branch', type: onnx.AttributeProto.AttributeType.GRAPH, g: branch('else') },
        ],
      }),
    ],
    input: [
      onnx.ValueInfoProto.create({
        name: 'C',
        type: { tensorType: { elemType: onnx.TensorProto.DataType.BOOL, shape: { dim: [{ dimValue: 1 }] } } },
      }),
      valueInfo('X', ['n']),
    ],
    output: [valueInfo('Y', ['n'])],
  });
}

/**
 * Y = X + W where the initializer W keeps its data in the external file `location` (a path the
 * runtime would resolve next to the model); `inSubgraph` puts it in an If's branches.
 */
export function externalDataModel(location: string, options: { inSubgraph?: boolean } = {}): Buffer {
  const weights = (name: string) =>
    onnx.TensorProto.create({
      name,
      dims: [4],
      dataType: FLOAT,
      dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
      externalData: [
        { key: 'location', value: location },
        { key: 'offset', value: '0' },
        { key: 'length', value: '16' },
      ],
    });
  if (!options.inSubgraph)
    return model(
      onnx.GraphProto.create({
        name: 'external',
        node: [onnx.NodeProto.create({ opType: 'Add', input: ['X', 'W'], output: ['Y'] })],
        initializer: [weights('W')],
        input: [valueInfo('X', [4])],
        output: [valueInfo('Y', [4])],
      }),
    );
  return model(
    ifModel((name) =>
      onnx.GraphProto.create({
        name,
        node: [onnx.NodeProto.create({ opType: 'Add', input: ['X', `${name}_W`], output: [`${name}_out`] })],
        initializer: [weights(`${name}_W`)],
        output: [valueInfo(`${name}_out`, [4])],
      }),
    ),
  );
}

/** A model whose IR version no runtime knows: the runtime's refusal names the file it was given. */
export function futureIrModel(): Buffer {
  const proto = onnx.ModelProto.decode(addModel());
  proto.irVersion = 99;
  return Buffer.from(onnx.ModelProto.encode(proto).finish());
}

/**
 * Y[1] = the sum of M^(2^depth)-ish products: X (a float32 [1]) expanded to a size × size matrix,
 * multiplied by itself `depth` times. CPU-bound for as long as `depth` and `size` say; the output
 * is one number.
 */
export function heavyModel(depth: number, size = 256): Buffer {
  const nodes = [
    onnx.NodeProto.create({ opType: 'Expand', input: ['X', 'shape'], output: ['M0'] }),
    ...Array.from({ length: depth }, (_, i) =>
      onnx.NodeProto.create({ opType: 'MatMul', input: [`M${i}`, `M${i}`], output: [`M${i + 1}`] }),
    ),
    onnx.NodeProto.create({
      opType: 'ReduceSum',
      input: [`M${depth}`],
      output: ['Y'],
      attribute: [{ name: 'keepdims', type: onnx.AttributeProto.AttributeType.INT, i: 0 }],
    }),
  ];
  return model(
    onnx.GraphProto.create({
      name: 'heavy',
      node: nodes,
      initializer: [onnx.TensorProto.create({ name: 'shape', dims: [2], dataType: INT64, int64Data: [size, size] })],
      input: [valueInfo('X', [1])],
      output: [valueInfo('Y', [])],
    }),
  );
}

/** A model of about `bytes` bytes: one float32 initializer returned by an Identity node (transfer tests and benches). */
export function identityModel(bytes: number): Buffer {
  const floats = Math.floor(bytes / 4);
  return Buffer.from(
    onnx.ModelProto.encode(
      onnx.ModelProto.create({
        irVersion: 8,
        opsetImport: [{ domain: '', version: 13 }],
        graph: {
          name: 'big',
          node: [{ opType: 'Identity', input: ['W'], output: ['Y'] }],
          initializer: [{ name: 'W', dims: [floats], dataType: 1, rawData: Buffer.alloc(floats * 4, 1) }],
          output: [{ name: 'Y', type: { tensorType: { elemType: 1, shape: { dim: [{ dimValue: floats }] } } } }],
        },
      }),
    ).finish(),
  );
}
