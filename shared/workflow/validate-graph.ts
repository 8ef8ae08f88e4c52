/**
 * Validation of a definition graph, shared by `check_definition` (a verdict) and
 * `create_definition` (a refusal carrying the same errors). Every problem is one issue naming the
 * node it belongs to and the field inside that node, so an editor can point at it; validation
 * goes on past the first problem and reports all it can find.
 *
 * Compiling `logic.code` is the sandbox's business: the caller passes a `CodeCheck` (the
 * control plane's is sandbox/check.ts), so this module loads no isolate of its own.
 */
import type { z } from 'zod';
import {
  graphShapeSchema,
  MAX_GRAPH_BYTES,
  MAX_NODES,
  NODE_NAME_RE,
  nodeSchema,
  ROUTE_NAME_RE,
  routeTargets,
  type GraphNode,
} from './graph.ts';
import { retrySchema, timeoutCeiling, timeoutSchema } from './node-policy.ts';
import { PROCESSOR_NAMES, processorByName } from './processors.ts';
import { MAX_PROPERTY_ESCAPES, propertyEscapes } from './property-escapes.ts';

/** What an issue is about; stable, so clients can key off it as they key off `error`. */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the type's source, each code described
const ISSUE_CODES = {
  invalid_graph: 'The graph is not `{start, nodes}`, or is too large.',
  invalid_node:
    'A node is not `{processor, config?, routes?, retry?, timeout_seconds?}`, its name breaks the node-name grammar, or its retry policy or timeout is out of bounds.',
  start_not_found: '`start` names no node of the graph.',
  unknown_processor: 'The node names a processor that does not exist.',
  invalid_config: "The node's config does not match its processor's schema.",
  unknown_route: "A route name the node's processor never takes.",
  route_target_not_found: 'A route leads to a node the graph does not have.',
  invalid_code:
    'A `logic.code` source does not compile, has no default export, or imports a module `workflow.code_imports` does not grant.',
  unreachable_node: '(warning) No route from `start` leads to the node.',
  fails_at_run_time: '(warning) The config passes its schema but a fixed ceiling will refuse it when the node runs.',
} as const;

type IssueCode = keyof typeof ISSUE_CODES;

/** One problem. `node` is null for the graph itself; `field` is a dotted path inside the node (or graph), null for the node as a whole. */
export interface GraphIssue {
  code: IssueCode;
  node: string | null;
  field: string | null;
  message: string;
}

/** A graph passes when `errors` is empty; warnings never fail it. */
export interface GraphVerdict {
  errors: GraphIssue[];
  warnings: GraphIssue[];
}

/**
 * Checks one `logic.code` source: compiles it as an ES module, refuses imports outside `imports`
 * and a missing default export. Resolves with the errors, empty when the source passes.
 */
export interface CodeCheck {
  check(
    code: string,
    options: { imports: readonly string[]; field: string },
  ): Promise<Array<{ field: string; message: string }>>;
}

export interface ValidateGraphOptions {
  codeCheck: CodeCheck;
  /** `workflow.code_imports` in force for the revision the definition belongs to. */
  codeImports: readonly string[];
  /**
   * The ceilings in force that bound a node's `timeout_seconds` (node-policy.ts `timeoutCeiling`);
   * a ceiling left out bounds nothing here (the runner still applies the execution's).
   */
  ceilings?: Partial<Record<'workflow.code_run_seconds' | 'workflow.execution_seconds', number>>;
}

/** Issues reported per node and field family at most, so one broken config cannot flood the verdict. */
const MAX_ISSUES_PER_PART = 10;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** zod issues as graph issues; an unknown key becomes one issue on that key's own path. */
function fromZod(code: IssueCode, node: string | null, prefix: string[], error: z.ZodError): GraphIssue[] {
  const issues: GraphIssue[] = [];
  for (const issue of error.issues) {
    const base = [...prefix, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        issues.push({ code, node, field: [...base, key].join('.'), message: `unknown field ${JSON.stringify(key)}` });
    } else {
      issues.push({ code, node, field: base.length > 0 ? base.join('.') : null, message: issue.message });
    }
  }
  return issues.slice(0, MAX_ISSUES_PER_PART);
}

/** Validates `graph` (any JSON value) and returns every error and warning found. */
export async function validateGraph(graph: unknown, options: ValidateGraphOptions): Promise<GraphVerdict> {
  const errors: GraphIssue[] = [];
  const warnings: GraphIssue[] = [];

  if (!isPlainObject(graph)) {
    return {
      errors: [
        { code: 'invalid_graph', node: null, field: null, message: 'the graph must be an object {start, nodes}' },
      ],
      warnings,
    };
  }
  const bytes = Buffer.byteLength(JSON.stringify(graph), 'utf8');
  if (bytes > MAX_GRAPH_BYTES) {
    return {
      errors: [
        {
          code: 'invalid_graph',
          node: null,
          field: null,
          message: `the graph is ${bytes} bytes as JSON; at most ${MAX_GRAPH_BYTES} are allowed`,
        },
      ],
      warnings,
    };
  }
  const shape = graphShapeSchema.safeParse(graph);
  if (!shape.success) errors.push(...fromZod('invalid_graph', null, [], shape.error));
  const nodes = graph.nodes;
  if (!isPlainObject(nodes)) return { errors, warnings };
  const names = Object.keys(nodes);
  if (names.length > MAX_NODES) {
    errors.push({
      code: 'invalid_graph',
      node: null,
      field: 'nodes',
      message: `the graph has ${names.length} nodes; at most ${MAX_NODES} are allowed`,
    });
    return { errors, warnings };
  }

  const valid = new Map<string, GraphNode>();
  const budget = { escapes: 0 };
  for (const name of names) {
    const node = await validateNode(name, nodes[name], nodes, options, errors, warnings, budget);
    if (node) valid.set(name, node);
  }

  const start = graph.start;
  if (typeof start === 'string') {
    if (!Object.hasOwn(nodes, start)) {
      errors.push({
        code: 'start_not_found',
        node: null,
        field: 'start',
        message: `start names no node: ${JSON.stringify(start)}`,
      });
    } else {
      for (const name of unreachable(start, names, valid)) {
        warnings.push({
          code: 'unreachable_node',
          node: name,
          field: null,
          message: `no route from ${JSON.stringify(start)} leads to this node`,
        });
      }
    }
  }
  return { errors, warnings };
}

/** Checks one node; returns it when its shape is sound enough to follow its routes. */
async function validateNode(
  name: string,
  raw: unknown,
  nodes: Record<string, unknown>,
  options: ValidateGraphOptions,
  errors: GraphIssue[],
  warnings: GraphIssue[],
  budget: { escapes: number },
): Promise<GraphNode | undefined> {
  if (!NODE_NAME_RE.test(name)) {
    errors.push({
      code: 'invalid_node',
      node: name,
      field: null,
      message: 'node names are 1-64 characters of A-Z a-z 0-9 _ . - starting with a letter, digit or _',
    });
  }
  const parsed = nodeSchema.safeParse(raw);
  if (!parsed.success) {
    errors.push(...fromZod('invalid_node', name, [], parsed.error));
    return undefined;
  }
  const node = parsed.data;
  checkPolicy(name, node, options, errors);
  const spec = processorByName(node.processor);
  let allowedRoutes: readonly string[] | 'any' | undefined;
  if (!spec) {
    errors.push({
      code: 'unknown_processor',
      node: name,
      field: 'processor',
      message: `no processor ${JSON.stringify(node.processor)}; processors are ${PROCESSOR_NAMES.join(', ')}`,
    });
  } else {
    const config = spec.config.safeParse(node.config ?? {});
    if (!config.success) {
      errors.push(...fromZod('invalid_config', name, ['config'], config.error));
    } else {
      allowedRoutes = spec.routes(config.data);
      for (const notice of spec.warn?.(config.data) ?? []) {
        warnings.push({
          code: 'fails_at_run_time',
          node: name,
          field: `config.${notice.field}`,
          message: notice.message,
        });
      }
      if (spec.name === 'logic.code') {
        const code = (config.data as { code: string }).code;
        budget.escapes += propertyEscapes(code);
        if (budget.escapes > MAX_PROPERTY_ESCAPES) {
          errors.push({
            code: 'invalid_code',
            node: name,
            field: 'config.code',
            message: `the graph's code holds more than ${MAX_PROPERTY_ESCAPES} Unicode property escapes (\\p{…}, \\P{…})`,
          });
        } else {
          // A check compiles on the calling thread: let other requests in between two sources.
          await new Promise((resolve) => setImmediate(resolve));
          const problems = await options.codeCheck.check(code, { imports: options.codeImports, field: 'config.code' });
          for (const problem of problems.slice(0, MAX_ISSUES_PER_PART)) {
            errors.push({ code: 'invalid_code', node: name, field: problem.field, message: problem.message });
          }
        }
      }
    }
  }

  for (const [route, target] of Object.entries(node.routes ?? {})) {
    const field = `routes.${route}`;
    if (!ROUTE_NAME_RE.test(route)) {
      errors.push({
        code: 'unknown_route',
        node: name,
        field,
        message: 'route names are 1-64 characters of a-z 0-9 _ . - starting with a letter, digit or _',
      });
    } else if (allowedRoutes !== undefined && allowedRoutes !== 'any' && !allowedRoutes.includes(route)) {
      errors.push({
        code: 'unknown_route',
        node: name,
        field,
        message: `${node.processor} never takes route ${JSON.stringify(route)}; it takes ${allowedRoutes.join(', ')}`,
      });
    }
    if (target !== null && !Object.hasOwn(nodes, target)) {
      errors.push({
        code: 'route_target_not_found',
        node: name,
        field,
        message: `route ${JSON.stringify(route)} leads to ${JSON.stringify(target)}, which is not a node of the graph`,
      });
    }
  }
  return node;
}

/** Checks a node's `retry` and `timeout_seconds` (node-policy.ts), the timeout against the ceiling in force. */
function checkPolicy(name: string, node: GraphNode, options: ValidateGraphOptions, errors: GraphIssue[]): void {
  if (node.retry !== undefined) {
    const retry = retrySchema.safeParse(node.retry);
    if (!retry.success) errors.push(...fromZod('invalid_node', name, ['retry'], retry.error));
  }
  if (node.timeout_seconds === undefined) return;
  const timeout = timeoutSchema.safeParse(node.timeout_seconds);
  if (!timeout.success) {
    errors.push(...fromZod('invalid_node', name, ['timeout_seconds'], timeout.error));
    return;
  }
  const ceiling = timeoutCeiling(node.processor);
  if (ceiling === null) {
    errors.push({
      code: 'invalid_node',
      node: name,
      field: 'timeout_seconds',
      message: `${node.processor} takes no timeout_seconds: its wait is not a run`,
    });
    return;
  }
  const bound = options.ceilings?.[ceiling];
  if (bound !== undefined && timeout.data > bound) {
    errors.push({
      code: 'invalid_node',
      node: name,
      field: 'timeout_seconds',
      message: `timeout_seconds is ${timeout.data}; ${ceiling} in force is ${bound}`,
    });
  }
}

/** Nodes no chain of routes from `start` reaches, in graph order. */
function unreachable(start: string, names: readonly string[], nodes: ReadonlyMap<string, GraphNode>): string[] {
  const seen = new Set<string>([start]);
  const queue = [start];
  while (queue.length > 0) {
    const node = nodes.get(queue.pop()!);
    if (!node) continue;
    for (const target of routeTargets(node)) {
      if (!seen.has(target)) {
        seen.add(target);
        queue.push(target);
      }
    }
  }
  return names.filter((name) => !seen.has(name));
}
