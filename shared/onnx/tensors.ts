/**
 * Tensors as JSON (`{type, dims, data}`, docs/blob-types.md "Running a model"): checked against a
 * model's recorded inputs before anything runs, so a mismatch is a 400 naming the input, not an
 * error from deep inside the runtime; and turned into ONNX Runtime's typed arrays and back.
 */
import type { z } from 'zod';
import type { tensorSchema } from '../workflow/processors.ts';

/** One input or output of a model as ONNX Runtime reported it at upload. */
export interface TensorSpec {
  name: string;
  type: string;
  shape: Array<number | string>;
}

export type JsonTensor = z.output<typeof tensorSchema>;

/** The types run_model accepts (the six of docs/blob-types.md; the runtime's others are not offered). */
const RUN_TYPES = ['float32', 'float64', 'int32', 'int64', 'bool', 'string'] as const;

function elementProblem(type: string, value: unknown): string | null {
  switch (type) {
    case 'float32':
    case 'float64':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'finite numbers';
    case 'int32':
      return typeof value === 'number' && Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31
        ? null
        : '32-bit integers';
    case 'int64':
      return (typeof value === 'number' && Number.isSafeInteger(value)) ||
        (typeof value === 'string' && /^-?\d{1,19}$/.test(value))
        ? null
        : 'integers (numbers, or decimal strings past 2^53)';
    case 'bool':
      return typeof value === 'boolean' ? null : 'booleans';
    case 'string':
      return typeof value === 'string' ? null : 'strings';
    default:
      return 'a supported type';
  }
}

/**
 * The problems of `inputs` against the model's `specs`, each naming the input: a missing or
 * unknown input, a type other than the model's, a rank or a fixed dimension that differs, an
 * element of the wrong kind. Empty when the inputs can run.
 */
export function inputProblems(specs: readonly TensorSpec[], inputs: Readonly<Record<string, JsonTensor>>): string[] {
  const problems: string[] = [];
  const known = new Set(specs.map((s) => s.name));
  for (const name of Object.keys(inputs))
    if (!known.has(name))
      problems.push(
        `inputs.${name}: the model has no input ${JSON.stringify(name)} (its inputs: ${[...known].join(', ')})`,
      );
  for (const spec of specs) {
    const tensor = inputs[spec.name];
    if (tensor === undefined) {
      problems.push(`inputs.${spec.name}: missing (${spec.type} [${spec.shape.join(', ')}])`);
      continue;
    }
    if (!(RUN_TYPES as readonly string[]).includes(tensor.type))
      problems.push(`inputs.${spec.name}: type ${tensor.type} is not one of ${RUN_TYPES.join(', ')}`);
    else if (tensor.type !== spec.type)
      problems.push(`inputs.${spec.name}: type ${tensor.type}, the model takes ${spec.type}`);
    if (spec.shape.length > 0 && tensor.dims.length !== spec.shape.length) {
      problems.push(
        `inputs.${spec.name}: ${tensor.dims.length} dimensions, the model takes ${spec.shape.length} ([${spec.shape.join(', ')}])`,
      );
    } else {
      spec.shape.forEach((dim, i) => {
        if (typeof dim === 'number' && dim >= 0 && tensor.dims[i] !== dim)
          problems.push(`inputs.${spec.name}: dimension ${i} is ${tensor.dims[i]}, the model takes ${dim}`);
      });
    }
    const count = tensor.dims.reduce((n, d) => n * d, 1);
    if (count !== tensor.data.length)
      problems.push(
        `inputs.${spec.name}: dims [${tensor.dims.join(', ')}] hold ${count} elements, data has ${tensor.data.length}`,
      );
    const bad = tensor.data.findIndex((value) => elementProblem(tensor.type, value) !== null);
    if (bad >= 0)
      problems.push(
        `inputs.${spec.name}: data[${bad}] is not of type ${tensor.type} (${elementProblem(tensor.type, tensor.data[bad])})`,
      );
  }
  return problems;
}
