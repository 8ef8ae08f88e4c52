import { readFile } from 'node:fs/promises';
import t from 'tap';
import {
  LIMIT_CATALOG,
  LIMIT_GROUPS,
  defaultOf,
  enabledLimitOf,
  groupById,
  isFixed,
  isLimitId,
  isTypeGroupId,
  limitById,
  limitsOfGroup,
  type LimitId,
} from '../../shared/limits/catalog.ts';
import { BLOB_TYPES } from '../../shared/blob-types.ts';

// The specification's catalog, row by row: id, kind, unit, per, default, most permissive, Set on.
// Kept apart from shared/limits/catalog.ts on purpose, so a slip in either shows here.
const SPEC: [string, string, string, string, unknown, number | null, string[]][] = [
  ['platform.orgs_per_user', 'quota', 'count', 'user', 1, null, ['user']],
  ['platform.blobs_per_org', 'quota', 'count', 'org', 3, null, ['user', 'org']],
  ['platform.revisions_per_blob', 'quota', 'count', 'blob', 2, null, ['user', 'org', 'blob']],
  ['workflow.enabled', 'entitlement', 'flag', 'org', true, null, ['user', 'org']],
  ['workflow.definitions_per_revision', 'quota', 'count', 'revision', 10, null, ['user', 'org', 'blob']],
  ['workflow.playgrounds_per_revision', 'quota', 'count', 'revision', 10, null, ['user', 'org', 'blob']],
  ['workflow.sessions_per_revision', 'quota', 'count', 'revision', 30, null, ['user', 'org', 'blob']],
  ['workflow.executions_per_session', 'quota', 'count', 'session', 1000, null, ['user', 'org', 'blob']],
  ['workflow.running_executions_per_org', 'quota', 'count', 'org', 10, null, ['user', 'org']],
  ['workflow.session_objects_per_session', 'quota', 'count', 'session', 1000, 10000, ['user', 'org', 'blob']],
  ['workflow.processor_runs_per_execution', 'ceiling', 'count', 'execution', 1000, 1000, ['user', 'org', 'blob']],
  ['workflow.execution_seconds', 'ceiling', 'seconds', 'execution', 86400, 86400, ['user', 'org', 'blob']],
  ['workflow.code_run_seconds', 'ceiling', 'seconds', 'node', 870, 870, ['user', 'org', 'blob']],
  ['workflow.code_imports', 'entitlement', 'modules', 'execution', [], null, ['user', 'org', 'blob']],
  ['workflow.execution_retention_days', 'retention', 'days', 'execution', 90, null, ['user', 'org', 'blob']],
  ['workflow.execution_input_bytes', 'ceiling', 'bytes', 'execution', 65536, null, []],
  ['workflow.session_object_bytes', 'ceiling', 'bytes', 'write', 5242880, null, []],
  ['workflow.session_file_bytes', 'ceiling', 'bytes', 'write', 4194304, null, []],
  ['workflow.thread_item_bytes', 'ceiling', 'bytes', 'write', 65536, null, []],
  ['workflow.thread_item_files', 'ceiling', 'count', 'write', 10, null, []],
  ['workflow.graph_element_bytes', 'ceiling', 'bytes', 'write', 65536, null, []],
  ['workflow.graph_mutations_per_call', 'ceiling', 'count', 'call', 40, null, []],
  ['workflow.graph_query_depth', 'ceiling', 'count', 'query', 10, null, []],
  ['workflow.graph_query_fanout', 'ceiling', 'count', 'query', 1000, null, []],
  ['workflow.graph_query_results', 'ceiling', 'count', 'query', 1000, null, []],
  ['workflow.graph_query_elements', 'ceiling', 'count', 'query', 5000, null, []],
  ['workflow.sleep_seconds', 'ceiling', 'seconds', 'node', 43200, null, []],
  ['scheduler.enabled', 'entitlement', 'flag', 'org', true, null, ['user', 'org']],
  ['scheduler.schedules_per_revision', 'quota', 'count', 'revision', 10, null, ['user', 'org', 'blob']],
  ['scheduler.min_interval_seconds', 'ceiling', 'seconds', 'schedule', 60, 60, ['user', 'org', 'blob']],
  ['scheduler.run_retention_days', 'retention', 'days', 'run', 30, null, ['user', 'org', 'blob']],
  ['onnx.enabled', 'entitlement', 'flag', 'org', true, null, ['user', 'org']],
  ['onnx.model_bytes', 'ceiling', 'bytes', 'upload', 524288000, null, ['user', 'org', 'blob']],
  ['graphdb.enabled', 'entitlement', 'flag', 'org', false, null, ['user', 'org']],
  ['graphdb.query_results', 'ceiling', 'count', 'query', 50, null, []],
  ['nlp.enabled', 'entitlement', 'flag', 'org', false, null, ['user', 'org']],
];

t.test('groups come in the fixed order with their labels and families', async (t) => {
  t.same(
    LIMIT_GROUPS.map((g) => [g.id, g.label, g.family]),
    [
      ['platform', 'Global', 'platform'],
      ['svc.compute.workflow', 'Workflow', 'workflow'],
      ['svc.compute.scheduler', 'Scheduler', 'scheduler'],
      ['svc.model.onnx', 'ONNX Model', 'onnx'],
      ['svc.graph.graphdb', 'Graph', 'graphdb'],
      ['svc.dataset.nlp', 'NLP Dataset', 'nlp'],
    ],
  );
});

t.test('the type groups are the blob types of shared/blob-types.ts, in the same order', async (t) => {
  t.same(
    LIMIT_GROUPS.filter((g) => g.id !== 'platform').map((g) => [g.id, g.family, g.label]),
    Object.entries(BLOB_TYPES).map(([type, info]) => [type, info.family, info.label]),
  );
});

t.test('each group holds its count of limits, and the catalog 36 in all', async (t) => {
  t.same(
    LIMIT_GROUPS.map((g) => [g.id, limitsOfGroup(g.id).length]),
    [
      ['platform', 3],
      ['svc.compute.workflow', 24],
      ['svc.compute.scheduler', 4],
      ['svc.model.onnx', 2],
      ['svc.graph.graphdb', 2],
      ['svc.dataset.nlp', 1],
    ],
  );
  t.equal(LIMIT_CATALOG.length, 36);
});

t.test('every limit matches the specification, in catalog order', async (t) => {
  t.same(
    LIMIT_CATALOG.map((l) => l.id),
    SPEC.map((row) => row[0]),
    'ids in order',
  );
  for (const [id, kind, unit, per, dflt, mostPermissive, setOn] of SPEC) {
    const limit = limitById(id);
    if (!limit) {
      t.fail(`${id} is missing`);
      continue;
    }
    t.same(
      {
        kind: limit.kind,
        unit: limit.unit,
        per: limit.per,
        default: limit.default,
        most_permissive: limit.most_permissive,
        set_on: limit.set_on,
      },
      { kind, unit, per, default: dflt, most_permissive: mostPermissive, set_on: setOn },
      id,
    );
    t.strictSame(defaultOf(id as LimitId), dflt, `${id} default is exact`);
    t.equal(isFixed(id as LimitId), setOn.length === 0, `${id} fixed`);
  }
});

t.test('ids are <family>.<name> of their group, and unique', async (t) => {
  for (const limit of LIMIT_CATALOG) {
    t.ok(limit.id.startsWith(`${groupById(limit.group).family}.`), limit.id);
  }
  t.equal(new Set(LIMIT_CATALOG.map((l) => l.id)).size, LIMIT_CATALOG.length);
});

t.test('only scheduler.min_interval_seconds is more permissive downwards', async (t) => {
  t.same(
    LIMIT_CATALOG.filter((l) => l.more_permissive === 'lower').map((l) => l.id),
    ['scheduler.min_interval_seconds'],
  );
  for (const limit of LIMIT_CATALOG) {
    const numeric = limit.kind === 'quota' || limit.kind === 'ceiling' || limit.kind === 'retention';
    t.equal(limit.more_permissive !== null, numeric, `${limit.id} has a direction exactly when numeric`);
  }
});

t.test('lookups', async (t) => {
  t.ok(isLimitId('workflow.code_imports'));
  t.notOk(isLimitId('workflow.nope'));
  t.notOk(isLimitId('constructor'));
  t.equal(limitById('platform.nope'), undefined);
  t.ok(isTypeGroupId('svc.graph.graphdb'));
  t.notOk(isTypeGroupId('platform'));
  t.notOk(isTypeGroupId('svc.nope'));
  t.same(
    LIMIT_GROUPS.filter((g) => g.id !== 'platform').map((g) =>
      enabledLimitOf(g.id as Exclude<typeof g.id, 'platform'>),
    ),
    ['workflow.enabled', 'scheduler.enabled', 'onnx.enabled', 'graphdb.enabled', 'nlp.enabled'],
  );
});

t.test('the catalog cannot be changed at run time', async (t) => {
  const imports = defaultOf('workflow.code_imports') as string[];
  t.throws(() => imports.push('lodash'), TypeError);
  t.throws(() => {
    (limitById('platform.orgs_per_user') as { default: number }).default = 5;
  }, TypeError);
  t.throws(() => (limitById('platform.orgs_per_user').set_on as unknown as string[]).push('org'), TypeError);
  t.same(defaultOf('workflow.code_imports'), []);
  t.equal(defaultOf('platform.orgs_per_user'), 1);
});

t.test('docs/limits.md lists the catalog exactly', async (t) => {
  const doc = await readFile(new URL('../../docs/limits.md', import.meta.url), 'utf8');
  const section = doc.split('<!-- catalog:start -->')[1]?.split('<!-- catalog:end -->')[0] ?? '';
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  const show = (v: unknown) => (Array.isArray(v) ? `[${v.join(', ')}]` : String(v));
  t.same(
    rows,
    LIMIT_CATALOG.map((l) => [
      `\`${l.id}\``,
      l.kind,
      l.unit,
      l.per,
      show(l.default),
      l.most_permissive === null ? '-' : show(l.most_permissive),
      l.set_on.length === 0 ? 'fixed' : l.set_on.join(', '),
    ]),
  );
});
