import t from 'tap';
import { LIMIT_CATALOG, OVERRIDE_LEVELS } from '../../shared/limits/catalog.ts';
import { OVERRIDE_REFUSALS, validateOverride, type OverrideCheck } from '../../shared/limits/overrides.ts';

const code = (check: OverrideCheck) => (check.ok ? 'ok' : check.code);

t.test('the five refusal codes are distinct and documented', async (t) => {
  t.same(Object.keys(OVERRIDE_REFUSALS), [
    'unknown_limit',
    'fixed_limit',
    'level_not_allowed',
    'invalid_value_type',
    'past_most_permissive',
  ]);
});

t.test('unknown_limit', async (t) => {
  for (const id of ['platform.nope', 'orgs_per_user', '', 'constructor', '__proto__', 'PLATFORM.ORGS_PER_USER']) {
    const check = validateOverride(id, 'user', 1);
    t.equal(code(check), 'unknown_limit', JSON.stringify(id));
  }
  const check = validateOverride('platform.nope', 'user', 1);
  t.match(check, { ok: false, message: /No limit of the catalog has this id\. Got "platform\.nope"\./ });
});

t.test('fixed_limit: every fixed limit, at every level, whatever the value', async (t) => {
  const fixed = LIMIT_CATALOG.filter((l) => l.set_on.length === 0);
  t.equal(fixed.length, 13);
  for (const limit of fixed) {
    for (const level of OVERRIDE_LEVELS)
      t.equal(code(validateOverride(limit.id, level, limit.default)), 'fixed_limit', `${limit.id} on ${level}`);
  }
  t.equal(
    code(validateOverride('graphdb.query_results', 'org', 'junk')),
    'fixed_limit',
    'fixed is reported before the type',
  );
});

t.test('level_not_allowed: every level outside Set on', async (t) => {
  let refused = 0;
  for (const limit of LIMIT_CATALOG) {
    if (limit.set_on.length === 0) continue;
    for (const level of OVERRIDE_LEVELS) {
      const allowed = (limit.set_on as readonly string[]).includes(level);
      t.equal(
        code(validateOverride(limit.id, level, limit.default)),
        allowed ? 'ok' : 'level_not_allowed',
        `${limit.id} on ${level}`,
      );
      if (!allowed) refused++;
    }
  }
  t.equal(
    refused,
    2 + 1 + 1 + 5,
    'orgs_per_user on org and blob; blobs_per_org, running_executions_per_org and the five enabled on blob',
  );
  t.equal(
    code(validateOverride('platform.revisions_per_blob', 'revision', 3)),
    'level_not_allowed',
    'a level that does not exist',
  );
  t.match(validateOverride('platform.orgs_per_user', 'org', 3), {
    ok: false,
    message: /can be set on user; got "org"/,
  });
});

t.test('invalid_value_type for quotas and ceilings: a non-negative integer', async (t) => {
  for (const value of [-1, 1.5, '3', null, true, [], {}, undefined, Number.NaN, Infinity, 2 ** 53, 10n]) {
    t.equal(
      code(validateOverride('workflow.sessions_per_revision', 'blob', value)),
      'invalid_value_type',
      `quota ${String(value)}`,
    );
    t.equal(code(validateOverride('onnx.model_bytes', 'org', value)), 'invalid_value_type', `ceiling ${String(value)}`);
  }
  t.same(
    validateOverride('workflow.sessions_per_revision', 'blob', 0),
    { ok: true, id: 'workflow.sessions_per_revision', level: 'blob', value: 0 },
    'zero is allowed: nothing may be held',
  );
  t.same(
    validateOverride('onnx.model_bytes', 'org', 1_073_741_824),
    { ok: true, id: 'onnx.model_bytes', level: 'org', value: 1_073_741_824 },
    'no platform bound',
  );
  t.match(validateOverride('platform.blobs_per_org', 'org', '3'), {
    ok: false,
    message: /platform\.blobs_per_org takes a non-negative integer; got "3"\./,
  });
});

t.test('invalid_value_type for enabled entitlements: a boolean', async (t) => {
  for (const id of ['workflow.enabled', 'scheduler.enabled', 'onnx.enabled', 'graphdb.enabled', 'nlp.enabled']) {
    for (const value of [1, 0, 'true', null, [], undefined])
      t.equal(code(validateOverride(id, 'org', value)), 'invalid_value_type', `${id} ${String(value)}`);
    t.same(validateOverride(id, 'user', true), { ok: true, id, level: 'user', value: true });
    t.same(validateOverride(id, 'org', false), { ok: true, id, level: 'org', value: false });
  }
});

t.test('invalid_value_type for workflow.code_imports: a list of module names', async (t) => {
  const bad = [
    'lodash',
    null,
    {},
    ['lodash', 3],
    ['Lodash'],
    ['node:fs'],
    ['./local'],
    ['lodash/fp'],
    ['a b'],
    ['.hidden'],
    ['@scope'],
    ['x'.repeat(215)],
    ['zod', 'zod'],
  ];
  for (const value of bad)
    t.equal(
      code(validateOverride('workflow.code_imports', 'org', value)),
      'invalid_value_type',
      JSON.stringify(value).slice(0, 40),
    );
  const check = validateOverride('workflow.code_imports', 'blob', [
    'lodash',
    '@scope/pkg',
    'date-fns',
    'x'.repeat(214),
  ]);
  t.match(check, { ok: true, level: 'blob', value: ['lodash', '@scope/pkg', 'date-fns', 'x'.repeat(214)] });
  t.same(
    validateOverride('workflow.code_imports', 'user', []),
    { ok: true, id: 'workflow.code_imports', level: 'user', value: [] },
    'an empty list is a value',
  );
  const input = ['zod'];
  const accepted = validateOverride('workflow.code_imports', 'org', input);
  input.push('lodash');
  t.same(accepted.ok && accepted.value, ['zod'], 'the accepted list is a copy');
});

t.test('invalid_value_type for retention: integer days or null', async (t) => {
  for (const id of ['workflow.execution_retention_days', 'scheduler.run_retention_days']) {
    for (const value of [-1, 0.5, '30', true, [], undefined])
      t.equal(code(validateOverride(id, 'org', value)), 'invalid_value_type', `${id} ${String(value)}`);
    t.same(validateOverride(id, 'blob', null), { ok: true, id, level: 'blob', value: null }, 'null: kept forever');
    t.same(validateOverride(id, 'user', 3650), { ok: true, id, level: 'user', value: 3650 });
  }
});

t.test('past_most_permissive, in the direction of each limit', async (t) => {
  const cases: [string, number, string][] = [
    ['workflow.session_objects_per_session', 10_001, 'past_most_permissive'],
    ['workflow.session_objects_per_session', 10_000, 'ok'],
    ['workflow.session_objects_per_session', 5, 'ok'],
    ['workflow.processor_runs_per_execution', 1_001, 'past_most_permissive'],
    ['workflow.processor_runs_per_execution', 1_000, 'ok'],
    ['workflow.processor_runs_per_execution', 100, 'ok'],
    ['workflow.execution_seconds', 86_401, 'past_most_permissive'],
    ['workflow.execution_seconds', 3_600, 'ok'],
    ['workflow.code_run_seconds', 871, 'past_most_permissive'],
    ['workflow.code_run_seconds', 870, 'ok'],
    ['scheduler.min_interval_seconds', 59, 'past_most_permissive'],
    ['scheduler.min_interval_seconds', 0, 'past_most_permissive'],
    ['scheduler.min_interval_seconds', 60, 'ok'],
    ['scheduler.min_interval_seconds', 86_400, 'ok'],
  ];
  for (const [id, value, expected] of cases)
    t.equal(code(validateOverride(id, 'org', value)), expected, `${id} = ${value}`);
  t.match(validateOverride('scheduler.min_interval_seconds', 'user', 30), {
    ok: false,
    message: /scheduler\.min_interval_seconds can be at least 60; got 30\./,
  });
  t.match(validateOverride('workflow.code_run_seconds', 'user', 900), {
    ok: false,
    message: /workflow\.code_run_seconds can be at most 870; got 900\./,
  });
  t.equal(
    code(validateOverride('workflow.code_run_seconds', 'user', -5)),
    'invalid_value_type',
    'the type is checked before the bound',
  );
});

t.test('every settable limit accepts its own default at every level of its Set on', async (t) => {
  for (const limit of LIMIT_CATALOG) {
    for (const level of limit.set_on) {
      t.same(
        validateOverride(limit.id, level, limit.default),
        { ok: true, id: limit.id, level, value: limit.default },
        `${limit.id} on ${level}`,
      );
    }
  }
});

t.test('messages quote long values cut short', async (t) => {
  const check = validateOverride('workflow.code_imports', 'org', 'y'.repeat(500));
  t.ok(!check.ok && check.message.length < 300);
  t.match(check, { ok: false, message: /\.\.\.\.$/ });
});
