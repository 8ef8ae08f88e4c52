/**
 * A look at an ONNX file's protobuf before ONNX Runtime is given it: how many nodes its graphs
 * hold (subgraphs of If/Loop/Scan and local functions included), and whether any tensor keeps its
 * data outside the file. The walk reads only the tags and lengths of the messages it descends into
 * and skips every other field by its length, so it costs a pass over the structure, never over the
 * weights: the runtime's own load of a graph of 200,000 nodes takes seconds and hundreds of
 * megabytes, this takes milliseconds and nothing.
 *
 * Field numbers are onnx.proto3's: ModelProto 7 graph, 20 training_info, 25 functions;
 * TrainingInfoProto 1 initialization, 2 algorithm; GraphProto 1 node,
 * 5 initializer, 15 sparse_initializer; NodeProto 5 attribute; AttributeProto 5 t, 6 g,
 * 10 tensors, 11 graphs, 22 sparse_tensor, 23 sparse_tensors; FunctionProto 7 node;
 * TensorProto 13 external_data, 14 data_location (EXTERNAL = 1); SparseTensorProto 1 values,
 * 2 indices.
 */

/** Why a model is refused before the runtime sees it, or null. */
export type ScanVerdict = { refused: string } | { nodes: number };

/** Subgraphs nested deeper than this are refused (ONNX models nest a handful at most). */
const MAX_DEPTH = 32;

type Kind = 'model' | 'training' | 'graph' | 'node' | 'attribute' | 'function' | 'tensor' | 'sparse';

/** The fields of each message kind that lead to nodes or tensors, and the kind they hold. */
const CHILDREN: Record<Kind, Record<number, Kind>> = {
  model: { 7: 'graph', 20: 'training', 25: 'function' },
  training: { 1: 'graph', 2: 'graph' },
  graph: { 1: 'node', 5: 'tensor', 15: 'sparse' },
  node: { 5: 'attribute' },
  attribute: { 5: 'tensor', 6: 'graph', 10: 'tensor', 11: 'graph', 22: 'sparse', 23: 'sparse' },
  function: { 7: 'node' },
  tensor: {},
  sparse: { 1: 'tensor', 2: 'tensor' },
};

class Refusal extends Error {}

/** Worded as the runtime words it, so a refusal reads the same whichever of the two saw it first. */
const MALFORMED = 'Protobuf parsing failed: it is not a well-formed ONNX model';

/**
 * Walks `bytes` as an ONNX ModelProto: refuses a model with more than `maxNodes` nodes in all its
 * graphs and functions, with any tensor whose data is external (`data_location` EXTERNAL or
 * `external_data` entries: the runtime would open files of the service's disk by the names the
 * model gives), or that is not well-formed protobuf. Messages name no path.
 */
export function scanModel(bytes: Uint8Array, maxNodes: number): ScanVerdict {
  let nodes = 0;
  const walk = (start: number, end: number, kind: Kind, depth: number): void => {
    if (depth > MAX_DEPTH) throw new Refusal(`its graphs nest deeper than ${MAX_DEPTH} levels`);
    if (kind === 'node' && ++nodes > maxNodes)
      throw new Refusal(`it has more than ${maxNodes} nodes (MODEL_MAX_NODES), counting subgraphs and functions`);
    let at = start;
    const varint = (): number => {
      let value = 0;
      let factor = 1;
      for (let i = 0; i < 10; i++) {
        if (at >= end) throw new Refusal(MALFORMED);
        const byte = bytes[at++]!;
        value += (byte & 0x7f) * factor;
        if (byte < 0x80) return value;
        factor *= 128;
      }
      throw new Refusal(MALFORMED);
    };
    while (at < end) {
      const key = varint();
      const field = Math.floor(key / 8);
      const wire = key % 8;
      if (wire === 0) {
        const value = varint();
        if (kind === 'tensor' && field === 14 && value === 1)
          throw new Refusal('a tensor keeps its data in an external file');
      } else if (wire === 1) at += 8;
      else if (wire === 5) at += 4;
      else if (wire === 2) {
        const length = varint();
        if (length > end - at) throw new Refusal(MALFORMED);
        if (kind === 'tensor' && field === 13) throw new Refusal('a tensor keeps its data in an external file');
        const child = CHILDREN[kind][field];
        if (child !== undefined) walk(at, at + length, child, child === 'graph' ? depth + 1 : depth);
        at += length;
      } else throw new Refusal(MALFORMED);
      if (at > end) throw new Refusal(MALFORMED);
    }
  };
  try {
    walk(0, bytes.length, 'model', 0);
  } catch (error) {
    if (error instanceof Refusal) return { refused: error.message };
    throw error;
  }
  return { nodes };
}
