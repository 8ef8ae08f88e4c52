import t from 'tap';
import { LIMIT_CATALOG, LIMIT_GROUPS, type LimitId } from '../../shared/limits/catalog.ts';
import {
  LIMIT_READS,
  blobLimitsReply,
  orgLimitsReply,
  resolveLimit,
  resolveLimits,
  shapeLimitGroups,
  userLimitsReply,
  type IgnoredOverride,
  type LimitGroupReply,
} from '../../shared/limits/resolve.ts';
import { entitlementRefusal, limitExceeded, limitObject, limitRefusal } from '../../shared/limits/limit-object.ts';

const ids = (groups: LimitGroupReply[]) => groups.map((g) => [g.id, g.limits.map((l) => l.id)]);

t.test('with no overrides every limit is its default', async (t) => {
  const all = resolveLimits({});
  for (const limit of LIMIT_CATALOG) {
    t.same(all[limit.id], { id: limit.id, value: limit.default, source: 'default' }, limit.id);
  }
  t.same(resolveLimit('platform.blobs_per_org', { user: {}, org: {}, blob: {} }), {
    id: 'platform.blobs_per_org',
    value: 3,
    source: 'default',
  });
});

t.test('an override applies at each level it may be set on', async (t) => {
  t.same(resolveLimit('workflow.sessions_per_revision', { user: { 'workflow.sessions_per_revision': 40 } }), {
    id: 'workflow.sessions_per_revision',
    value: 40,
    source: 'user',
  });
  t.same(resolveLimit('workflow.sessions_per_revision', { org: { 'workflow.sessions_per_revision': 50 } }), {
    id: 'workflow.sessions_per_revision',
    value: 50,
    source: 'org',
  });
  t.same(resolveLimit('workflow.sessions_per_revision', { blob: { 'workflow.sessions_per_revision': 60 } }), {
    id: 'workflow.sessions_per_revision',
    value: 60,
    source: 'blob',
  });
  t.same(resolveLimit('platform.orgs_per_user', { user: { 'platform.orgs_per_user': 4 } }), {
    id: 'platform.orgs_per_user',
    value: 4,
    source: 'user',
  });
  t.same(resolveLimit('graphdb.enabled', { org: { 'graphdb.enabled': true } }), {
    id: 'graphdb.enabled',
    value: true,
    source: 'org',
  });
  t.same(resolveLimit('workflow.enabled', { user: { 'workflow.enabled': false } }), {
    id: 'workflow.enabled',
    value: false,
    source: 'user',
  });
});

t.test('the nearest override wins, limit by limit', async (t) => {
  const overrides = {
    user: {
      'workflow.sessions_per_revision': 40,
      'workflow.definitions_per_revision': 11,
      'platform.revisions_per_blob': 5,
    },
    org: { 'workflow.sessions_per_revision': 50, 'workflow.definitions_per_revision': 12 },
    blob: { 'workflow.sessions_per_revision': 5 },
  };
  const all = resolveLimits(overrides);
  t.same(
    all['workflow.sessions_per_revision'],
    { id: 'workflow.sessions_per_revision', value: 5, source: 'blob' },
    'blob beats org and user, even when lower',
  );
  t.same(
    all['workflow.definitions_per_revision'],
    { id: 'workflow.definitions_per_revision', value: 12, source: 'org' },
    'org beats user',
  );
  t.same(
    all['platform.revisions_per_blob'],
    { id: 'platform.revisions_per_blob', value: 5, source: 'user' },
    'user beats default',
  );
  t.same(all['workflow.playgrounds_per_revision'], {
    id: 'workflow.playgrounds_per_revision',
    value: 10,
    source: 'default',
  });
});

t.test('a list override replaces the whole list for its level and below', async (t) => {
  const overrides = {
    user: { 'workflow.code_imports': ['lodash', 'date-fns'] },
    org: { 'workflow.code_imports': ['zod'] },
  };
  t.same(resolveLimit('workflow.code_imports', { user: overrides.user }).value, ['lodash', 'date-fns']);
  t.same(
    resolveLimit('workflow.code_imports', overrides),
    { id: 'workflow.code_imports', value: ['zod'], source: 'org' },
    'not merged with the user list',
  );
  t.same(
    resolveLimit('workflow.code_imports', { ...overrides, blob: { 'workflow.code_imports': [] } }),
    { id: 'workflow.code_imports', value: [], source: 'blob' },
    'an empty list takes every import away',
  );
});

t.test('retention null (kept forever) is a value, not an absence', async (t) => {
  t.same(
    resolveLimit('workflow.execution_retention_days', {
      user: { 'workflow.execution_retention_days': 7 },
      org: { 'workflow.execution_retention_days': null },
    }),
    { id: 'workflow.execution_retention_days', value: null, source: 'org' },
  );
  t.same(resolveLimit('scheduler.run_retention_days', { blob: { 'scheduler.run_retention_days': 365 } }), {
    id: 'scheduler.run_retention_days',
    value: 365,
    source: 'blob',
  });
});

t.test('an override on a level outside Set on is skipped', async (t) => {
  const ignored: IgnoredOverride[] = [];
  const onIgnored = (i: IgnoredOverride) => ignored.push(i);
  t.same(
    resolveLimit(
      'platform.orgs_per_user',
      { org: { 'platform.orgs_per_user': 9 }, blob: { 'platform.orgs_per_user': 9 } },
      { onIgnored },
    ),
    { id: 'platform.orgs_per_user', value: 1, source: 'default' },
  );
  t.same(
    resolveLimit(
      'platform.blobs_per_org',
      { user: { 'platform.blobs_per_org': 7 }, blob: { 'platform.blobs_per_org': 9 } },
      { onIgnored },
    ),
    { id: 'platform.blobs_per_org', value: 7, source: 'user' },
    'falls back to the next farther level',
  );
  t.same(
    resolveLimit(
      'workflow.enabled',
      { org: { 'workflow.enabled': true }, blob: { 'workflow.enabled': false } },
      { onIgnored },
    ),
    { id: 'workflow.enabled', value: true, source: 'org' },
  );
  t.same(
    ignored.map((i) => [i.id, i.level, i.code, i.action]),
    [
      ['platform.orgs_per_user', 'blob', 'level_not_allowed', 'skipped'],
      ['platform.orgs_per_user', 'org', 'level_not_allowed', 'skipped'],
      ['platform.blobs_per_org', 'blob', 'level_not_allowed', 'skipped'],
      ['workflow.enabled', 'blob', 'level_not_allowed', 'skipped'],
    ],
  );
});

t.test('fixed limits never change', async (t) => {
  const fixed = LIMIT_CATALOG.filter((l) => l.set_on.length === 0);
  t.equal(fixed.length, 13);
  const everywhere = Object.fromEntries(fixed.map((l) => [l.id, 1]));
  const all = resolveLimits({ user: everywhere, org: everywhere, blob: everywhere });
  for (const limit of fixed) t.same(all[limit.id], { id: limit.id, value: limit.default, source: 'default' }, limit.id);
});

t.test('a stored value of the wrong type is skipped', async (t) => {
  const ignored: IgnoredOverride[] = [];
  const r = resolveLimit(
    'workflow.sessions_per_revision',
    {
      user: { 'workflow.sessions_per_revision': 40 },
      org: { 'workflow.sessions_per_revision': '50' },
      blob: { 'workflow.sessions_per_revision': -1 },
    },
    { onIgnored: (i) => ignored.push(i) },
  );
  t.same(r, { id: 'workflow.sessions_per_revision', value: 40, source: 'user' });
  t.same(
    ignored.map((i) => [i.level, i.code]),
    [
      ['blob', 'invalid_value_type'],
      ['org', 'invalid_value_type'],
    ],
  );
  t.same(resolveLimit('workflow.enabled', { org: { 'workflow.enabled': 'yes' } }), {
    id: 'workflow.enabled',
    value: true,
    source: 'default',
  });
  t.same(resolveLimit('workflow.code_imports', { org: { 'workflow.code_imports': 'lodash' } }).source, 'default');
});

t.test('a value past the most permissive is clamped to it, in either direction', async (t) => {
  const ignored: IgnoredOverride[] = [];
  const onIgnored = (i: IgnoredOverride) => ignored.push(i);
  t.same(
    resolveLimit(
      'workflow.session_objects_per_session',
      { org: { 'workflow.session_objects_per_session': 50_000 } },
      { onIgnored },
    ),
    { id: 'workflow.session_objects_per_session', value: 10_000, source: 'org' },
  );
  t.same(
    resolveLimit('workflow.session_objects_per_session', { org: { 'workflow.session_objects_per_session': 10_000 } }),
    { id: 'workflow.session_objects_per_session', value: 10_000, source: 'org' },
    'the bound itself applies',
  );
  t.same(resolveLimit('workflow.code_run_seconds', { blob: { 'workflow.code_run_seconds': 871 } }, { onIgnored }), {
    id: 'workflow.code_run_seconds',
    value: 870,
    source: 'blob',
  });
  t.same(
    resolveLimit('workflow.code_run_seconds', { blob: { 'workflow.code_run_seconds': 30 } }),
    { id: 'workflow.code_run_seconds', value: 30, source: 'blob' },
    'stricter is always allowed',
  );
  t.same(
    resolveLimit('scheduler.min_interval_seconds', { user: { 'scheduler.min_interval_seconds': 10 } }, { onIgnored }),
    { id: 'scheduler.min_interval_seconds', value: 60, source: 'user' },
    'lower is more permissive: 10 clamps up to 60',
  );
  t.same(
    resolveLimit('scheduler.min_interval_seconds', { user: { 'scheduler.min_interval_seconds': 3600 } }),
    { id: 'scheduler.min_interval_seconds', value: 3600, source: 'user' },
    'raising it is allowed',
  );
  t.same(
    ignored.map((i) => [i.id, i.code, i.action]),
    [
      ['workflow.session_objects_per_session', 'past_most_permissive', 'clamped'],
      ['workflow.code_run_seconds', 'past_most_permissive', 'clamped'],
      ['scheduler.min_interval_seconds', 'past_most_permissive', 'clamped'],
    ],
  );
  for (const limit of LIMIT_CATALOG) {
    if (limit.most_permissive === null) continue;
    const extreme = limit.more_permissive === 'lower' ? 0 : Number.MAX_SAFE_INTEGER;
    const value = resolveLimits({ blob: { [limit.id]: extreme } })[limit.id].value;
    t.equal(value, limit.most_permissive, `${limit.id} never resolves past ${limit.most_permissive}`);
  }
});

t.test('only own properties count as overrides', async (t) => {
  const inherited = Object.create({ 'platform.orgs_per_user': 5 }) as Record<string, unknown>;
  t.same(resolveLimit('platform.orgs_per_user', { user: inherited }).source, 'default');
});

t.test('Get User Limits shows platform and every type group, held on platform.orgs_per_user', async (t) => {
  const groups = userLimitsReply({ user: { 'platform.blobs_per_org': 6 } }, { 'platform.orgs_per_user': 1 });
  t.same(
    groups.map((g) => g.id),
    LIMIT_GROUPS.map((g) => g.id),
  );
  t.same(
    ids(groups),
    LIMIT_GROUPS.map((g) => [g.id, LIMIT_CATALOG.filter((l) => l.group === g.id).map((l) => l.id)]),
  );
  t.same(groups[0], {
    id: 'platform',
    label: 'Global',
    family: 'platform',
    limits: [
      {
        id: 'platform.orgs_per_user',
        kind: 'quota',
        unit: 'count',
        per: 'user',
        default: 1,
        value: 1,
        source: 'default',
        most_permissive: null,
        set_on: ['user'],
        held: 1,
      },
      {
        id: 'platform.blobs_per_org',
        kind: 'quota',
        unit: 'count',
        per: 'org',
        default: 3,
        value: 6,
        source: 'user',
        most_permissive: null,
        set_on: ['user', 'org'],
      },
      {
        id: 'platform.revisions_per_blob',
        kind: 'quota',
        unit: 'count',
        per: 'blob',
        default: 2,
        value: 2,
        source: 'default',
        most_permissive: null,
        set_on: ['user', 'org', 'blob'],
      },
    ],
  });
  const withHeld = groups
    .flatMap((g) => g.limits)
    .filter((l) => 'held' in l)
    .map((l) => l.id);
  t.same(withHeld, ['platform.orgs_per_user']);
  const fixedEntry = groups[1]!.limits.find((l) => l.id === 'workflow.sleep_seconds');
  t.same(fixedEntry?.set_on, [], 'a fixed limit has an empty set_on');
  t.same(
    groups[4]!.limits[0],
    {
      id: 'graphdb.enabled',
      kind: 'entitlement',
      unit: 'flag',
      per: 'org',
      default: false,
      value: false,
      source: 'default',
      most_permissive: null,
      set_on: ['user', 'org'],
    },
    'a type not enabled still appears',
  );
});

t.test('Get Organization Limits leaves out platform.orgs_per_user, held on the two org quotas', async (t) => {
  const groups = orgLimitsReply(
    { user: { 'workflow.running_executions_per_org': 20 }, org: { 'graphdb.enabled': true } },
    { 'platform.blobs_per_org': 2, 'workflow.running_executions_per_org': 3 },
  );
  t.same(
    groups.map((g) => g.id),
    LIMIT_GROUPS.map((g) => g.id),
  );
  t.same(
    groups[0]!.limits.map((l) => l.id),
    ['platform.blobs_per_org', 'platform.revisions_per_blob'],
  );
  t.same(
    groups.slice(1).map((g) => g.limits.length),
    [24, 4, 2, 2, 1],
  );
  const held = groups
    .flatMap((g) => g.limits)
    .filter((l) => 'held' in l)
    .map((l) => [l.id, l.held]);
  t.same(held, [
    ['platform.blobs_per_org', 2],
    ['workflow.running_executions_per_org', 3],
  ]);
  const running = groups[1]!.limits.find((l) => l.id === 'workflow.running_executions_per_org');
  t.match(running, { value: 20, source: 'user', default: 10 });
  t.match(groups[4]!.limits[0], { id: 'graphdb.enabled', value: true, source: 'org' });
});

t.test('Get Blob Limits shows platform.revisions_per_blob and the blob type group only', async (t) => {
  for (const group of LIMIT_GROUPS.slice(1)) {
    const type = group.id as Exclude<typeof group.id, 'platform'>;
    const groups = blobLimitsReply(type, {}, { 'platform.revisions_per_blob': 2 });
    t.same(
      ids(groups),
      [
        ['platform', ['platform.revisions_per_blob']],
        [type, LIMIT_CATALOG.filter((l) => l.group === type).map((l) => l.id)],
      ],
      type,
    );
    t.equal(groups[0]!.limits[0]!.held, 2);
    t.equal(
      groups.flatMap((g) => g.limits).filter((l) => 'held' in l).length,
      1,
      'no quota of a revision or session carries held',
    );
  }
  const groups = blobLimitsReply(
    'svc.compute.workflow',
    {
      user: { 'workflow.code_imports': ['lodash'] },
      org: { 'platform.revisions_per_blob': 4 },
      blob: { 'workflow.sessions_per_revision': 1 },
    },
    { 'platform.revisions_per_blob': 0 },
  );
  t.match(groups[0]!.limits[0], { value: 4, source: 'org', held: 0 });
  t.match(
    groups[1]!.limits.find((l) => l.id === 'workflow.code_imports'),
    { value: ['lodash'], source: 'user', default: [] },
  );
  t.match(
    groups[1]!.limits.find((l) => l.id === 'workflow.sessions_per_revision'),
    { value: 1, source: 'blob' },
  );
});

t.test('shaping refuses a missing or stray held (a programming error)', async (t) => {
  t.throws(
    () => shapeLimitGroups({}, LIMIT_READS.org, { 'platform.blobs_per_org': 1 }),
    /needs held for workflow.running_executions_per_org/,
  );
  t.throws(
    () => shapeLimitGroups({}, LIMIT_READS.user, { 'platform.orgs_per_user': 1, 'platform.blobs_per_org': 1 }),
    /does not show as held: platform.blobs_per_org/,
  );
  t.throws(
    () =>
      shapeLimitGroups({}, LIMIT_READS.blob('svc.model.onnx'), {
        'platform.revisions_per_blob': 1,
        'workflow.sessions_per_revision': 1,
      }),
    /workflow.sessions_per_revision/,
  );
});

t.test('the limit object of a refusal', async (t) => {
  const quota = resolveLimit('platform.orgs_per_user', {});
  t.same(limitObject(quota, 1), { id: 'platform.orgs_per_user', value: 1, held: 1 });
  t.throws(() => limitObject(quota), /needs held/);
  const ceiling = resolveLimit('onnx.model_bytes', { org: { 'onnx.model_bytes': 1024 } });
  t.same(limitObject(ceiling), { id: 'onnx.model_bytes', value: 1024 });
  t.throws(() => limitObject(ceiling, 3), /not a quota/);

  const error = limitExceeded(resolveLimit('workflow.running_executions_per_org', {}), 10);
  t.equal(error.code, 'limit_exceeded');
  t.equal(error.status, 400);
  t.same(error.toEnvelope(), {
    status: 'failure',
    error: 'limit_exceeded',
    message: 'Limit workflow.running_executions_per_org is 10 and 10 are held.',
    limit: { id: 'workflow.running_executions_per_org', value: 10, held: 10 },
  });

  const tooLarge = limitRefusal('session_object_too_large', resolveLimit('workflow.session_object_bytes', {}));
  t.same(tooLarge.toEnvelope().limit, { id: 'workflow.session_object_bytes', value: 5_242_880 });
  t.equal(tooLarge.message, 'Limit workflow.session_object_bytes is 5242880.');

  const imports = resolveLimit('workflow.code_imports', { org: { 'workflow.code_imports': ['zod'] } });
  const object = limitObject(imports);
  t.same(object, { id: 'workflow.code_imports', value: ['zod'] });
  (object.value as string[]).push('x');
  t.same(imports.value, ['zod'], 'the limit object holds a copy of a list');

  const type = entitlementRefusal(resolveLimit('graphdb.enabled', {}));
  t.equal(type.code, 'invalid_blob_type');
  t.same(type.toEnvelope().limit, { id: 'graphdb.enabled', value: false });
  t.throws(() => entitlementRefusal(quota), /not an enabled entitlement/);
});

t.test('resolveLimits covers every id', async (t) => {
  const all = resolveLimits({});
  t.same(
    Object.keys(all),
    LIMIT_CATALOG.map((l) => l.id as LimitId),
  );
});
