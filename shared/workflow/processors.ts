/**
 * The processor catalog: every processor a definition may name, its config schema and the routes
 * it can take. `check_definition` / `create_definition` validate against this table, the runner
 * runs what it describes, and docs/workflow.md documents it; a processor exists here or nowhere.
 *
 * Config schemas are strict (an unknown key is an error). Values a node writes (`data`, `value`)
 * are arbitrary JSON: the graph arrives as JSON, so they need no deeper check here.
 */
import { z } from 'zod';
import { aliasSchema, UUID_RE } from '../ids.ts';
import { defaultOf, isFixed } from '../limits/catalog.ts';
import { threadSchema } from '../session/thread-writes.ts';
import { ROUTE_NAME_RE } from './graph.ts';
import { EGRESS_METHODS } from '../egress/policy.ts';
import { templateProblems } from './templates.ts';

/** Largest `logic.code` source, in UTF-8 bytes. */
export const MAX_CODE_BYTES = 256 * 1024;

/** Most cases one `logic.switch` may hold, and conditions one case may combine. */
const MAX_SWITCH_CASES = 100;
const MAX_CASE_CONDITIONS = 20;

/** The routes a processor run can end on, besides the named ones `logic.code` / `logic.switch` take. */
export const SUCCESS = 'success';
export const FAILURE = 'failure';

/** A problem the catalog finds in one node's config beyond its schema (a warning: see `warn`). */
interface ConfigNotice {
  /** Dotted path below `config`. */
  field: string;
  message: string;
}

/** One catalog entry. */
export interface ProcessorSpec<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  /** One line for docs and error messages. */
  readonly summary: string;
  readonly config: S;
  /**
   * The route names a run of this node can take, given its parsed config, or `'any'` when the
   * node chooses them at run time (`logic.code`'s `ctx.route(name, output)`).
   */
  routes(config: z.output<S>): readonly string[] | 'any';
  /**
   * Configs that pass the schema but are certain to fail at run time, against a fixed ceiling.
   * They are warnings, not errors: the run-time refusal is the specified behaviour (a
   * `logic.sleep` past `workflow.sleep_seconds` fails its execution with `flow.error`).
   */
  warn?(config: z.output<S>): ConfigNotice[];
}

function processor<S extends z.ZodType>(spec: ProcessorSpec<S>): ProcessorSpec<S> {
  return spec;
}

type FixedCeiling = 'workflow.sleep_seconds' | 'workflow.thread_item_files' | 'workflow.graph_mutations_per_call';

/** The value in force of a `fixed` ceiling is its catalog default, for every account. */
function fixedCeiling(id: FixedCeiling): number {
  if (!isFixed(id)) throw new Error(`${id} is not fixed: its value depends on the account`);
  return defaultOf(id);
}

const routeName = z
  .string()
  .regex(ROUTE_NAME_RE, 'route names are 1-64 characters of a-z 0-9 _ . - starting with a letter, digit or _');

/** Exactly one of `keys` must be present in `value` (presence, so that a JSON `null` counts). */
function exactlyOne(keys: readonly string[]) {
  return (value: object, ctx: z.core.$RefinementCtx) => {
    const present = keys.filter((key) => Object.hasOwn(value, key));
    if (present.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `exactly one of ${keys.join(', ')} is required${present.length > 1 ? ` (got ${present.join(', ')})` : ''}`,
      });
    }
  };
}

// ---- logic.code -------------------------------------------------------------------------------

const codeConfig = z.strictObject({
  code: z
    .string()
    .min(1, 'code is empty')
    .refine((code) => Buffer.byteLength(code, 'utf8') <= MAX_CODE_BYTES, `code is larger than ${MAX_CODE_BYTES} bytes`),
});

// ---- logic.sleep ------------------------------------------------------------------------------

const sleepConfig = z.strictObject({ seconds: z.int().min(0) });

// ---- logic.switch -----------------------------------------------------------------------------

/**
 * Where a condition looks in the node's input: a dotted string (`"order.total"`, `"items.0.sku"`;
 * `""` is the whole input) or an array of keys and indexes for keys that contain a dot.
 */
const inputPathSchema = z.union([
  z.string().max(1000),
  z.array(z.union([z.string().max(200), z.int().min(0)])).max(64),
]);

/** The operators of a condition; each condition has exactly one. */
const SWITCH_OPERATORS = ['equals', 'not_equals', 'in', 'exists', 'gt', 'gte', 'lt', 'lte'] as const;

const switchConditionSchema = z
  .strictObject({
    path: inputPathSchema,
    equals: z.unknown().optional(),
    not_equals: z.unknown().optional(),
    in: z.array(z.unknown()).max(1000).optional(),
    exists: z.boolean().optional(),
    gt: z.number().optional(),
    gte: z.number().optional(),
    lt: z.number().optional(),
    lte: z.number().optional(),
  })
  .superRefine(exactlyOne(SWITCH_OPERATORS));

export type SwitchCondition = z.output<typeof switchConditionSchema>;

const switchConfig = z.strictObject({
  cases: z
    .array(
      z.strictObject({
        /** One condition, or several that must all hold. */
        when: z.union([switchConditionSchema, z.array(switchConditionSchema).min(1).max(MAX_CASE_CONDITIONS)]),
        route: routeName,
      }),
    )
    .min(1)
    .max(MAX_SWITCH_CASES),
  /** The route taken when no case matches. */
  default: routeName.optional(),
});

export type SwitchConfig = z.output<typeof switchConfig>;

/** The route a `logic.switch` takes when no case matches and its config names none. */
export const SWITCH_DEFAULT_ROUTE = 'default';

// ---- thread.post ------------------------------------------------------------------------------

const threadPostConfig = z.strictObject({
  /** Defaults to `main`; the grammar of `post_session_thread_item`, from the same schema. */
  thread: threadSchema.optional(),
  text: z.string().optional(),
  data: z.unknown().optional(),
  /** Aliases of session files the item refers to. */
  files: z.array(aliasSchema).optional(),
});

export type ThreadPostConfig = z.output<typeof threadPostConfig>;

// ---- object.put -------------------------------------------------------------------------------

const objectPutConfig = z
  .strictObject({
    alias: aliasSchema,
    value: z.unknown().optional(),
    from_input: z.literal(true).optional(),
  })
  .superRefine(exactlyOne(['value', 'from_input']));

export type ObjectPutConfig = z.output<typeof objectPutConfig>;

// ---- graph.mutate -----------------------------------------------------------------------------

/**
 * One mutation, as `mutate_session_graph` takes it. Only the operation name is checked here;
 * the fields of each operation are checked by the same code that serves the command, when the
 * node runs, so the two can never disagree.
 */
const mutationSchema = z.looseObject({ op: z.enum(['upsert_node', 'upsert_edge', 'delete']) });

const graphMutateConfig = z
  .strictObject({
    mutations: z.array(mutationSchema).min(1).optional(),
    from_input: z.literal(true).optional(),
  })
  .superRefine(exactlyOne(['mutations', 'from_input']));

export type GraphMutateConfig = z.output<typeof graphMutateConfig>;

// ---- onnx.run ---------------------------------------------------------------------------------

const TENSOR_TYPES = [
  'float32',
  'float64',
  'int8',
  'uint8',
  'int16',
  'uint16',
  'int32',
  'int64',
  'bool',
  'string',
] as const;

/** A tensor as JSON: its element type, its dimensions and its elements in row-major order. */
export const tensorSchema = z
  .strictObject({
    type: z.enum(TENSOR_TYPES),
    dims: z.array(z.int().min(0)).max(16),
    data: z.array(z.union([z.number(), z.string(), z.boolean()])),
  })
  .refine(
    (tensor) => tensor.dims.reduce((n, d) => n * d, 1) === tensor.data.length,
    'data must hold exactly the product of dims elements',
  );

const onnxRunConfig = z.strictObject({
  /** A revision of an `svc.model.onnx` blob holding an uploaded model. */
  revision_id: z.string().regex(UUID_RE, 'revision_id must be a canonical lower-case UUID'),
  /** Model inputs by name; when left out, the node's input is taken as that map. */
  inputs: z.record(z.string(), tensorSchema).optional(),
  /** The output names to return; all of them when left out. */
  outputs: z.array(z.string().min(1)).min(1).optional(),
});

export type OnnxRunConfig = z.output<typeof onnxRunConfig>;

// ---- http.request -----------------------------------------------------------------------------

/** Largest `http.request` body template, and most headers one node may set. */
const MAX_REQUEST_BODY_CHARS = 1024 * 1024;
const MAX_REQUEST_HEADERS = 50;

/** A template string (docs/workflow.md, "Templates"): its placeholders are checked here. */
function template(max: number) {
  return z
    .string()
    .max(max)
    .superRefine((text, ctx) => {
      for (const message of templateProblems(text)) ctx.addIssue({ code: 'custom', message });
    });
}

const httpRequestConfig = z
  .strictObject({
    method: z.enum(EGRESS_METHODS).optional(),
    url: template(8192).min(1),
    headers: z
      .record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/, 'header names are HTTP tokens'), template(16_384))
      .refine((h) => Object.keys(h).length <= MAX_REQUEST_HEADERS, `at most ${MAX_REQUEST_HEADERS} headers`)
      .optional(),
    body: template(MAX_REQUEST_BODY_CHARS).optional(),
    body_from_input: z.literal(true).optional(),
    expected_statuses: z.array(z.int().min(100).max(599)).min(1).max(100).optional(),
    max_response_bytes: z.int().min(1).optional(),
    timeout_ms: z.int().min(1).max(3_600_000).optional(),
    redirect: z.enum(['follow', 'manual', 'error']).optional(),
  })
  .superRefine((config, ctx) => {
    if (config.body !== undefined && config.body_from_input)
      ctx.addIssue({ code: 'custom', message: 'at most one of body, body_from_input' });
    const method = config.method ?? 'GET';
    if ((method === 'GET' || method === 'HEAD') && (config.body !== undefined || config.body_from_input))
      ctx.addIssue({ code: 'custom', path: ['method'], message: `a ${method} request has no body` });
  });

export type HttpRequestConfig = z.output<typeof httpRequestConfig>;

// ---- the catalog ------------------------------------------------------------------------------

const both = [SUCCESS, FAILURE] as const;

/** Every processor, in the order docs/workflow.md lists them. */
const PROCESSORS = [
  processor({
    name: 'logic.code',
    summary: 'Runs an ES module in the sandbox; its default export (input, ctx) returns the output.',
    config: codeConfig,
    routes: () => 'any',
  }),
  processor({
    name: 'logic.sleep',
    summary: 'Waits `seconds` without holding a runner, then passes its input on.',
    config: sleepConfig,
    routes: () => [SUCCESS],
    warn(config) {
      const max = fixedCeiling('workflow.sleep_seconds');
      return config.seconds > max
        ? [
            {
              field: 'seconds',
              message: `workflow.sleep_seconds is ${max}: this sleep will fail its execution with flow.error`,
            },
          ]
        : [];
    },
  }),
  processor({
    name: 'logic.switch',
    summary:
      'Takes the route of the first case whose conditions hold on the input, else the default route; passes its input on.',
    config: switchConfig,
    routes: (config) => [...new Set([...config.cases.map((c) => c.route), config.default ?? SWITCH_DEFAULT_ROUTE])],
  }),
  processor({
    name: 'thread.post',
    summary:
      'Posts a thread item into the session (the input as `data` when neither text nor data is set); passes its input on.',
    config: threadPostConfig,
    routes: () => both,
    warn(config) {
      const max = fixedCeiling('workflow.thread_item_files');
      return (config.files?.length ?? 0) > max
        ? [{ field: 'files', message: `workflow.thread_item_files is ${max}: this post will fail with too_many_files` }]
        : [];
    },
  }),
  processor({
    name: 'object.put',
    summary: 'Writes a session object: `value`, or the input with `from_input: true`; passes its input on.',
    config: objectPutConfig,
    routes: () => both,
  }),
  processor({
    name: 'graph.mutate',
    summary:
      'Applies graph mutations to the session graph: `mutations`, or the input with `from_input: true`; passes its input on.',
    config: graphMutateConfig,
    routes: () => both,
    warn(config) {
      const max = fixedCeiling('workflow.graph_mutations_per_call');
      return (config.mutations?.length ?? 0) > max
        ? [
            {
              field: 'mutations',
              message: `workflow.graph_mutations_per_call is ${max}: this node will fail with graph_mutation_too_large`,
            },
          ]
        : [];
    },
  }),
  processor({
    name: 'onnx.run',
    summary: 'Runs the ONNX model of a revision on tensors; outputs `{outputs}`.',
    config: onnxRunConfig,
    routes: () => both,
  }),
  processor({
    name: 'http.request',
    summary:
      'Calls an outside URL under the egress policy (templates may hold {{input…}} and {{credentials.NAME}}); outputs `{status, headers, body}`.',
    config: httpRequestConfig,
    routes: () => both,
  }),
] as const;

export type ProcessorName = (typeof PROCESSORS)[number]['name'];

const BY_NAME: ReadonlyMap<string, ProcessorSpec> = new Map(
  PROCESSORS.map((p) => [p.name, p as unknown as ProcessorSpec]),
);

/** The catalog entry of `name`, or undefined for a name no processor has. */
export function processorByName(name: string): ProcessorSpec | undefined {
  return BY_NAME.get(name);
}

/** Every processor name, in catalog order. */
export const PROCESSOR_NAMES: readonly ProcessorName[] = PROCESSORS.map((p) => p.name);
