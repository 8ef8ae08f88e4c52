import t from 'tap';
import { CodeChecker } from '../../sandbox/check.ts';
import { MAX_GRAPH_BYTES, MAX_NODES } from '../../shared/workflow/graph.ts';
import { MAX_CODE_BYTES, PROCESSOR_NAMES } from '../../shared/workflow/processors.ts';
import { MAX_PROPERTY_ESCAPES } from '../../shared/workflow/property-escapes.ts';
import { validateGraph, type GraphIssue } from '../../shared/workflow/validate-graph.ts';

const checker = new CodeChecker();
t.teardown(() => checker.dispose());

const CODE = 'export default async (input, ctx) => ({ hello: input.name })';

function check(graph: unknown, codeImports: readonly string[] = []) {
  return validateGraph(graph, { codeCheck: checker, codeImports });
}

/** The issues without their prose, which may be reworded. */
function shapes(issues: GraphIssue[]): Array<Omit<GraphIssue, 'message'>> {
  return issues.map(({ code, node, field }) => ({ code, node, field }));
}

/** A graph of one node `only`, with `node` merged into it. */
function single(node: Record<string, unknown>): unknown {
  return { start: 'only', nodes: { only: node } };
}

t.test('the example of docs/workflow.md "The graph format" passes with no warnings', async (t) => {
  const verdict = await check({
    start: 'greet',
    nodes: {
      greet: { processor: 'logic.code', config: { code: CODE }, routes: { success: 'pause', failure: 'report' } },
      pause: { processor: 'logic.sleep', config: { seconds: 2 }, routes: { success: null } },
      report: { processor: 'thread.post', config: { text: 'greeting failed' } },
    },
  });
  t.same(verdict, { errors: [], warnings: [] });
});

t.test('a valid config of every processor passes', async (t) => {
  const configs: Record<string, unknown> = {
    'logic.code': { code: CODE },
    'logic.sleep': { seconds: 0 },
    'logic.switch': { cases: [{ when: { path: 'n', gt: 1 }, route: 'big' }] },
    'thread.post': {},
    'object.put': { alias: 'result', from_input: true },
    'graph.mutate': { mutations: [{ op: 'upsert_node', id: 'a', label: 'x' }] },
    'onnx.run': { revision_id: '00000000-0000-4000-8000-000000000000' },
    'http.request': {
      method: 'POST',
      url: 'https://api.example.com/items/{{input.id}}',
      headers: { authorization: 'Bearer {{credentials.api}}' },
      body: '{"name": {{input.name}}}',
      expected_statuses: [200, 201],
    },
  };
  t.same(Object.keys(configs), PROCESSOR_NAMES, 'every processor is covered');
  for (const [processor, config] of Object.entries(configs)) {
    t.same(await check(single({ processor, config })), { errors: [], warnings: [] }, processor);
  }
});

t.test('graph shape', async (t) => {
  for (const graph of [null, [], 'x', 5]) {
    t.same(
      shapes((await check(graph)).errors),
      [{ code: 'invalid_graph', node: null, field: null }],
      JSON.stringify(graph),
    );
  }
  t.same(shapes((await check({ nodes: { a: { processor: 'logic.sleep', config: { seconds: 1 } } } })).errors), [
    { code: 'invalid_graph', node: null, field: 'start' },
  ]);
  t.same(shapes((await check({ start: 'a' })).errors), [{ code: 'invalid_graph', node: null, field: 'nodes' }]);
  t.same(shapes((await check({ start: 'a', nodes: [] })).errors), [
    { code: 'invalid_graph', node: null, field: 'nodes' },
  ]);
  t.same(shapes((await check({ start: 'a', nodes: {}, extra: 1 })).errors), [
    { code: 'invalid_graph', node: null, field: 'extra' },
    { code: 'start_not_found', node: null, field: 'start' },
  ]);
});

t.test('size bounds: nodes and serialized bytes', async (t) => {
  const nodes = Object.fromEntries(
    Array.from({ length: MAX_NODES + 1 }, (_, i) => [`n${i}`, { processor: 'logic.sleep', config: { seconds: 1 } }]),
  );
  t.same(shapes((await check({ start: 'n0', nodes })).errors), [{ code: 'invalid_graph', node: null, field: 'nodes' }]);
  delete nodes[`n${MAX_NODES}`];
  t.same((await check({ start: 'n0', nodes })).errors, [], 'exactly the maximum passes');
  const huge = {
    start: 'a',
    nodes: { a: { processor: 'thread.post', config: { data: 'x'.repeat(MAX_GRAPH_BYTES) } } },
  };
  t.match((await check(huge)).errors, [{ code: 'invalid_graph', node: null, field: null, message: /bytes/ }]);
});

t.test('start must name a node', async (t) => {
  const verdict = await check({ start: 'nope', nodes: { a: { processor: 'logic.sleep', config: { seconds: 1 } } } });
  t.same(shapes(verdict.errors), [{ code: 'start_not_found', node: null, field: 'start' }]);
  t.same(verdict.warnings, [], 'no reachability is claimed without a start');
});

t.test('node shape and name', async (t) => {
  t.same(shapes((await check(single({ config: {} }))).errors), [
    { code: 'invalid_node', node: 'only', field: 'processor' },
  ]);
  t.same(shapes((await check(single({ processor: 'logic.sleep', config: { seconds: 1 }, next: 'x' }))).errors), [
    { code: 'invalid_node', node: 'only', field: 'next' },
  ]);
  t.same(
    shapes((await check(single({ processor: 'logic.sleep', config: { seconds: 1 }, routes: { success: 5 } }))).errors),
    [{ code: 'invalid_node', node: 'only', field: 'routes.success' }],
  );
  t.same(shapes((await check({ start: 'a', nodes: { a: 'logic.sleep' } })).errors), [
    { code: 'invalid_node', node: 'a', field: null },
  ]);
  const badName = await check({
    start: 'has space',
    nodes: { 'has space': { processor: 'logic.sleep', config: { seconds: 1 } } },
  });
  t.same(shapes(badName.errors), [{ code: 'invalid_node', node: 'has space', field: null }]);
});

t.test('an unknown processor names the field and lists the real ones', async (t) => {
  const verdict = await check(single({ processor: 'logic.teleport', config: {} }));
  t.same(shapes(verdict.errors), [{ code: 'unknown_processor', node: 'only', field: 'processor' }]);
  t.match(verdict.errors[0]!.message, /logic\.code.*onnx\.run/);
});

t.test('each processor config schema', async (t) => {
  const cases: Array<[string, unknown, string[]]> = [
    ['logic.code', {}, ['config.code']],
    ['logic.code', { code: '' }, ['config.code']],
    ['logic.code', { code: 'x'.repeat(MAX_CODE_BYTES + 1) }, ['config.code']],
    ['logic.code', { code: CODE, timeout: 5 }, ['config.timeout']],
    ['logic.sleep', { seconds: -1 }, ['config.seconds']],
    ['logic.sleep', { seconds: 1.5 }, ['config.seconds']],
    ['logic.sleep', { seconds: '1' }, ['config.seconds']],
    ['logic.sleep', undefined, ['config.seconds']],
    ['logic.switch', { cases: [] }, ['config.cases']],
    ['logic.switch', { cases: [{ when: { path: 'a' }, route: 'x' }] }, ['config.cases.0.when']],
    ['logic.switch', { cases: [{ when: { path: 'a', equals: 1, gt: 0 }, route: 'x' }] }, ['config.cases.0.when']],
    ['logic.switch', { cases: [{ when: { path: 'a', equals: 1 }, route: 'Not A Route' }] }, ['config.cases.0.route']],
    ['logic.switch', { cases: [{ when: { path: 'a', equals: 1 }, route: 'x' }], default: '' }, ['config.default']],
    ['thread.post', { text: 5 }, ['config.text']],
    ['thread.post', { files: 'a' }, ['config.files']],
    ['thread.post', { thread: '' }, ['config.thread']],
    ['thread.post', { thread: 'Main' }, ['config.thread']],
    ['thread.post', { files: ['ok-file', 'x'] }, ['config.files.1']],
    ['object.put', { alias: 'result' }, ['config']],
    ['object.put', { alias: 'result', value: 1, from_input: true }, ['config']],
    ['object.put', { alias: 'x', value: 1 }, ['config.alias']],
    ['object.put', { alias: 'result', from_input: false }, ['config.from_input']],
    ['graph.mutate', {}, ['config']],
    ['graph.mutate', { mutations: [] }, ['config.mutations']],
    ['graph.mutate', { mutations: [{ op: 'drop_table' }] }, ['config.mutations.0.op']],
    ['onnx.run', { revision_id: 'my-model' }, ['config.revision_id']],
    [
      'onnx.run',
      { revision_id: '00000000-0000-4000-8000-000000000000', inputs: { x: { type: 'float32', dims: [2], data: [1] } } },
      ['config.inputs.x'],
    ],
    [
      'onnx.run',
      { revision_id: '00000000-0000-4000-8000-000000000000', inputs: { x: { type: 'complex', dims: [1], data: [1] } } },
      ['config.inputs.x.type'],
    ],
  ];
  for (const [processor, config, fields] of cases) {
    const node = config === undefined ? { processor } : { processor, config };
    const verdict = await check(single(node));
    t.same(
      verdict.errors.map((e) => [e.code, e.node, e.field]),
      fields.map((f) => ['invalid_config', 'only', f]),
      `${processor} ${String(JSON.stringify(config)).slice(0, 80)}`,
    );
  }
});

t.test('routes: a processor takes only its own route names', async (t) => {
  const sleep = await check({
    start: 'a',
    nodes: {
      a: { processor: 'logic.sleep', config: { seconds: 1 }, routes: { success: 'b', failure: 'b' } },
      b: { processor: 'thread.post' },
    },
  });
  t.same(shapes(sleep.errors), [{ code: 'unknown_route', node: 'a', field: 'routes.failure' }]);
  t.match(sleep.errors[0]!.message, /logic\.sleep never takes route "failure"; it takes success/);

  const post = await check(single({ processor: 'thread.post', routes: { success: null, failure: null, retry: null } }));
  t.same(shapes(post.errors), [{ code: 'unknown_route', node: 'only', field: 'routes.retry' }]);

  const code = await check(
    single({
      processor: 'logic.code',
      config: { code: CODE },
      routes: { success: null, 'named-route': null, 'Bad Name': null },
    }),
  );
  t.same(
    shapes(code.errors),
    [{ code: 'unknown_route', node: 'only', field: 'routes.Bad Name' }],
    'logic.code takes any well-formed name',
  );

  const switchNode = {
    processor: 'logic.switch',
    config: { cases: [{ when: { path: 'n', gt: 1 }, route: 'big' }], default: 'small' },
  };
  t.same((await check(single({ ...switchNode, routes: { big: null, small: null } }))).errors, []);
  t.same(shapes((await check(single({ ...switchNode, routes: { default: null } }))).errors), [
    { code: 'unknown_route', node: 'only', field: 'routes.default' },
  ]);
  const implicitDefault = {
    processor: 'logic.switch',
    config: { cases: [{ when: { path: 'n', gt: 1 }, route: 'big' }] },
    routes: { default: null, success: null },
  };
  t.same(shapes((await check(single(implicitDefault))).errors), [
    { code: 'unknown_route', node: 'only', field: 'routes.success' },
  ]);
});

t.test('routes must lead to existing nodes or null', async (t) => {
  const verdict = await check({
    start: 'a',
    nodes: { a: { processor: 'thread.post', routes: { success: 'ghost', failure: null } } },
  });
  t.same(shapes(verdict.errors), [{ code: 'route_target_not_found', node: 'a', field: 'routes.success' }]);
  t.match(verdict.errors[0]!.message, /"ghost"/);
});

t.test('unreachable nodes are warnings, not errors; loops are fine', async (t) => {
  const verdict = await check({
    start: 'a',
    nodes: {
      a: { processor: 'logic.code', config: { code: CODE }, routes: { success: 'b', again: 'a' } },
      b: { processor: 'thread.post', routes: { success: 'a' } },
      island: { processor: 'thread.post', routes: { success: 'island2' } },
      island2: { processor: 'thread.post' },
    },
  });
  t.same(verdict.errors, []);
  t.same(shapes(verdict.warnings), [
    { code: 'unreachable_node', node: 'island', field: null },
    { code: 'unreachable_node', node: 'island2', field: null },
  ]);
});

t.test('fixed ceilings a config is certain to break are warnings', async (t) => {
  const sleep = await check(single({ processor: 'logic.sleep', config: { seconds: 43_201 } }));
  t.same(sleep.errors, []);
  t.same(shapes(sleep.warnings), [{ code: 'fails_at_run_time', node: 'only', field: 'config.seconds' }]);
  t.match(sleep.warnings[0]!.message, /workflow\.sleep_seconds is 43200/);
  t.same(
    (await check(single({ processor: 'logic.sleep', config: { seconds: 43_200 } }))).warnings,
    [],
    'the ceiling itself is allowed',
  );

  const files = await check(
    single({ processor: 'thread.post', config: { files: Array.from({ length: 11 }, (_, i) => `file-${i}`) } }),
  );
  t.same(shapes(files.warnings), [{ code: 'fails_at_run_time', node: 'only', field: 'config.files' }]);
  const mutations = await check(
    single({
      processor: 'graph.mutate',
      config: { mutations: Array.from({ length: 41 }, (_, i) => ({ op: 'delete', id: `e${i}` })) },
    }),
  );
  t.same(shapes(mutations.warnings), [{ code: 'fails_at_run_time', node: 'only', field: 'config.mutations' }]);
});

t.test('logic.code: a syntax error, a missing default export', async (t) => {
  const syntax = await check(single({ processor: 'logic.code', config: { code: 'export default (input) => {' } }));
  t.same(shapes(syntax.errors), [{ code: 'invalid_code', node: 'only', field: 'config.code' }]);
  t.match(syntax.errors[0]!.message, /SyntaxError/);
  const noDefault = await check(single({ processor: 'logic.code', config: { code: 'export const x = 1;' } }));
  t.same(shapes(noDefault.errors), [{ code: 'invalid_code', node: 'only', field: 'config.code' }]);
  t.match(noDefault.errors[0]!.message, /default export/);
});

t.test('logic.code: imports are checked against workflow.code_imports', async (t) => {
  const graph = single({ processor: 'logic.code', config: { code: `import { v4 } from '@ws/uuid';\n${CODE}` } });
  const refused = await check(graph, []);
  t.same(shapes(refused.errors), [{ code: 'invalid_code', node: 'only', field: 'config.code' }]);
  t.match(refused.errors[0]!.message, /"@ws\/uuid" is not granted by workflow\.code_imports/);
  t.same((await check(graph, ['@ws/uuid'])).errors, [], 'granted, it passes');
  const builtin = await check(
    single({ processor: 'logic.code', config: { code: `import fs from 'node:fs';\n${CODE}` } }),
    ['node:fs'],
  );
  t.match(builtin.errors, [{ code: 'invalid_code', field: 'config.code', message: /Node built-in/ }]);
});

t.test('every problem is reported, not just the first', async (t) => {
  const verdict = await check({
    start: 'missing',
    nodes: {
      a: { processor: 'logic.sleep', config: { seconds: -1 }, routes: { success: 'ghost' } },
      b: { processor: 'nope' },
      c: { processor: 'logic.code', config: { code: '(' } },
    },
  });
  t.same(shapes(verdict.errors), [
    { code: 'invalid_config', node: 'a', field: 'config.seconds' },
    { code: 'route_target_not_found', node: 'a', field: 'routes.success' },
    { code: 'unknown_processor', node: 'b', field: 'processor' },
    { code: 'invalid_code', node: 'c', field: 'config.code' },
    { code: 'start_not_found', node: null, field: 'start' },
  ]);
});

t.test('Unicode property escapes are budgeted per graph before anything compiles', async (t) => {
  // Each \p{…} in a regular expression literal is resolved while V8 parses it, on the control
  // plane's thread, and within one literal takes ≈ 0.9 MiB outside the isolate's heap: a 40 KiB
  // source of them aborted the process. The budget is counted in the text, so what crosses it is
  // never compiled.
  const compiled: string[] = [];
  const counting = {
    check: async (code: string, options: { imports: readonly string[]; field: string }) => {
      compiled.push(code);
      return checker.check(code, options);
    },
  };
  const escapes = (n: number) => `const re = /${'\\p{L}'.repeat(n)}/u; export default () => re.source.length;`;
  const two = (a: number, b: number) => ({
    start: 'a',
    nodes: {
      a: { processor: 'logic.code', config: { code: escapes(a) }, routes: { success: 'b' } },
      b: { processor: 'logic.code', config: { code: escapes(b) } },
    },
  });
  const within = await validateGraph(two(32, MAX_PROPERTY_ESCAPES - 32), { codeCheck: counting, codeImports: [] });
  t.same(within.errors, [], `${MAX_PROPERTY_ESCAPES} in all pass`);
  t.equal(compiled.length, 2);

  compiled.length = 0;
  const past = await validateGraph(two(32, MAX_PROPERTY_ESCAPES - 31), { codeCheck: counting, codeImports: [] });
  t.same(shapes(past.errors), [{ code: 'invalid_code', node: 'b', field: 'config.code' }]);
  t.match(past.errors[0]?.message, /Unicode property escapes/);
  t.equal(compiled.length, 1, 'the source past the budget was not compiled');

  const bomb = await check(
    single({ processor: 'logic.code', config: { code: `/${'\\p{RGI_Emoji}'.repeat(2500)}/v` } }),
  );
  t.same(shapes(bomb.errors), [{ code: 'invalid_code', node: 'only', field: 'config.code' }], 'refused, not compiled');
});

t.test('a syntax error quoting a long pattern is cut in the verdict', async (t) => {
  const verdict = await check(
    single({ processor: 'logic.code', config: { code: `/(${'a'.repeat(10_000)}/; export default () => 1` } }),
  );
  t.equal(verdict.errors.length, 1);
  t.ok(verdict.errors[0]!.message.length <= 500, `${verdict.errors[0]!.message.length} characters`);
});
