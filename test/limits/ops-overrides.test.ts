import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { buildOpsApp } from '../../control-plane/ops/app.ts';
import { LIMIT_CATALOG, LIMIT_GROUPS } from '../../shared/limits/catalog.ts';
import { createBoss } from '../../shared/queue/queues.ts';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from '../helpers/app.ts';
import { createBlob, createOrg, uniqueAlias } from '../helpers/resources.ts';

const { app, db, config, databaseUrl } = await buildTestApp(t);
const token = config.secrets.OPS_TOKEN;

interface GqlResult {
  status: number;
  body: { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
}

async function gql(
  ops: FastifyInstance,
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = { authorization: `Bearer ${token}` },
): Promise<GqlResult> {
  const res = await ops.inject({ method: 'POST', url: '/graphql', headers, payload: { query, variables } });
  return { status: res.statusCode, body: res.json() };
}

const WRITE_FIELDS = `
  override { limitId targetType targetId value setBy setAt problem }
  previous { limitId targetType targetId value setBy problem }
  change { id limitId targetType targetId action hadOverride oldValue newValue changedBy changedAt }`;

const SET = `mutation ($limitId: String!, $targetType: LimitTargetType!, $targetId: String!, $value: LimitValue) {
  setLimitOverride(limitId: $limitId, targetType: $targetType, targetId: $targetId, value: $value) { ${WRITE_FIELDS} } }`;
const CLEAR = `mutation ($limitId: String!, $targetType: LimitTargetType!, $targetId: String!) {
  clearLimitOverride(limitId: $limitId, targetType: $targetType, targetId: $targetId) { ${WRITE_FIELDS} } }`;
const CHANGES = `query ($limitId: String, $targetType: LimitTargetType, $targetId: String, $limit: Int, $beforeId: ID) {
  limitOverrideChanges(limitId: $limitId, targetType: $targetType, targetId: $targetId, limit: $limit, beforeId: $beforeId) {
    id limitId targetType targetId action hadOverride oldValue newValue changedBy changedAt } }`;
const OVERRIDES = `query ($limitId: String, $targetType: LimitTargetType, $targetId: String, $limit: Int) {
  limitOverrides(limitId: $limitId, targetType: $targetType, targetId: $targetId, limit: $limit) {
    limitId targetType targetId value setBy setAt problem } }`;
const IN_FORCE = `query ($targetType: LimitTargetType!, $targetId: String!) {
  limitsInForce(targetType: $targetType, targetId: $targetId) {
    targetType targetId alias blobType userId orgId blobId
    groups { id label family limits { id kind unit per default value source mostPermissive setOn held } } } }`;

async function rowCounts(): Promise<{ overrides: number; changes: number }> {
  const { rows } = await db.query<{ overrides: number; changes: number }>(
    'SELECT (SELECT count(*)::int FROM limit_overrides) AS overrides, (SELECT count(*)::int FROM limit_override_changes) AS changes',
  );
  return rows[0]!;
}

/** The REST limits reply with its keys in the GraphQL spelling. */
function camelGroups(groups: any[]): any[] {
  return groups.map((group) => ({
    ...group,
    limits: group.limits.map((entry: any) => ({
      id: entry.id,
      kind: entry.kind,
      unit: entry.unit,
      per: entry.per,
      default: entry.default,
      value: entry.value,
      source: entry.source,
      mostPermissive: entry.most_permissive,
      setOn: entry.set_on,
      held: entry.held ?? null,
    })),
  }));
}

// A subtest of its own, so pg-boss is stopped before the database is dropped at the file's end.
t.test('limit overrides through the operations API', async (t) => {
  const boss = createBoss(databaseUrl, 'control-plane');
  await boss.start();
  const ops = await buildOpsApp({ config, db, boss, logger: false });
  t.teardown(async () => {
    await ops.close();
    await boss.stop({ graceful: false });
  });

  const set = (vars: Record<string, unknown>, headers?: Record<string, string>) => gql(ops, SET, vars, headers);
  const clear = (vars: Record<string, unknown>, headers?: Record<string, string>) => gql(ops, CLEAR, vars, headers);

  async function freshOrg(): Promise<{ owner: Caller; org: Record<string, any> }> {
    const owner = await signInAnonymous(app, { defaultLimits: true });
    const org = await createOrg(app, owner);
    return { owner, org };
  }

  t.test('every limits field needs the ops token; without it nothing is written', async (t) => {
    const { owner, org } = await freshOrg();
    const before = await rowCounts();
    for (const authorization of [undefined, 'Bearer wrong', `Basic ${token}`]) {
      const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
      const write = await set(
        { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: 9 },
        headers,
      );
      t.equal(write.status, 401, String(authorization));
      t.equal(write.body.errors?.[0]?.extensions?.code, 'unauthorized');
      t.equal(write.body.data, undefined);
      const read = await gql(ops, '{ limitCatalog { id } }', {}, headers);
      t.equal(read.status, 401);
    }
    t.same(await rowCounts(), before);
    const rest = await call(app, 'GET', `/v1/orgs/${org.id}/limits`, { as: owner });
    t.equal(rest.body.groups[0].limits[0].value, 3, 'the value in force did not change');
  });

  t.test('the catalog, in catalog order', async (t) => {
    const { status, body } = await gql(
      ops,
      '{ limitCatalog { id label family limits { id kind unit per default mostPermissive morePermissive setOn fixed } } }',
    );
    t.equal(status, 200);
    const groups = body.data.limitCatalog;
    t.same(
      groups.map((g: any) => [g.id, g.label, g.family]),
      LIMIT_GROUPS.map((g) => [g.id, g.label, g.family]),
    );
    t.same(
      groups.flatMap((g: any) => g.limits.map((l: any) => l.id)),
      LIMIT_CATALOG.map((l) => l.id),
    );
    const all = new Map(groups.flatMap((g: any) => g.limits.map((l: any) => [l.id, l])));
    t.same(all.get('platform.orgs_per_user'), {
      id: 'platform.orgs_per_user',
      kind: 'quota',
      unit: 'count',
      per: 'user',
      default: 1,
      mostPermissive: null,
      morePermissive: 'higher',
      setOn: ['user'],
      fixed: false,
    });
    t.same(all.get('scheduler.min_interval_seconds'), {
      id: 'scheduler.min_interval_seconds',
      kind: 'ceiling',
      unit: 'seconds',
      per: 'schedule',
      default: 60,
      mostPermissive: 60,
      morePermissive: 'lower',
      setOn: ['user', 'org', 'blob'],
      fixed: false,
    });
    t.same(all.get('workflow.code_imports'), {
      id: 'workflow.code_imports',
      kind: 'entitlement',
      unit: 'modules',
      per: 'execution',
      default: [],
      mostPermissive: null,
      morePermissive: null,
      setOn: ['user', 'org', 'blob'],
      fixed: false,
    });
    t.same(all.get('graphdb.query_results'), {
      id: 'graphdb.query_results',
      kind: 'ceiling',
      unit: 'count',
      per: 'query',
      default: 50,
      mostPermissive: null,
      morePermissive: 'higher',
      setOn: [],
      fixed: true,
    });
    t.same(all.get('graphdb.enabled'), {
      id: 'graphdb.enabled',
      kind: 'entitlement',
      unit: 'flag',
      per: 'org',
      default: false,
      mostPermissive: null,
      morePermissive: null,
      setOn: ['user', 'org'],
      fixed: false,
    });
  });

  t.test('set, then the next REST request uses it; set again; clear; the history has every step', async (t) => {
    const { owner, org } = await freshOrg();
    const first = await set({ limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.alias, value: 1 });
    t.equal(first.status, 200);
    t.equal(first.body.errors, undefined);
    const w1 = first.body.data.setLimitOverride;
    t.match(w1.override, {
      limitId: 'platform.blobs_per_org',
      targetType: 'org',
      targetId: org.id,
      value: 1,
      setBy: 'ops',
      setAt: String,
      problem: null,
    });
    t.equal(w1.previous, null);
    t.match(w1.change, {
      id: String,
      limitId: 'platform.blobs_per_org',
      targetType: 'org',
      targetId: org.id,
      action: 'set',
      hadOverride: false,
      oldValue: null,
      newValue: 1,
      changedBy: 'ops',
      changedAt: String,
    });

    let limits = await call(app, 'GET', `/v1/orgs/${org.id}/limits`, { as: owner });
    t.match(limits.body.groups[0].limits[0], { id: 'platform.blobs_per_org', value: 1, source: 'org', held: 0 });
    await createBlob(app, owner, org.id);
    const refused = await call(app, 'POST', `/v1/blobs/${org.id}`, {
      as: owner,
      body: { type: 'svc.compute.workflow', alias: uniqueAlias('b') },
    });
    t.equal(refused.status, 400);
    t.same(refused.body.limit, { id: 'platform.blobs_per_org', value: 1, held: 1 });

    const second = await set(
      { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: 2 },
      { authorization: `Bearer ${token}`, 'x-ops-actor': 'alice@example.com' },
    );
    const w2 = second.body.data.setLimitOverride;
    t.match(w2.override, { value: 2, setBy: 'ops:alice@example.com' });
    t.match(w2.previous, { value: 1, setBy: 'ops' });
    t.match(w2.change, {
      action: 'set',
      hadOverride: true,
      oldValue: 1,
      newValue: 2,
      changedBy: 'ops:alice@example.com',
    });
    t.equal(
      (
        await call(app, 'POST', `/v1/blobs/${org.id}`, {
          as: owner,
          body: { type: 'svc.compute.workflow', alias: uniqueAlias('b') },
        })
      ).status,
      201,
      'the next request uses the new value',
    );

    const cleared = await clear({ limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.alias });
    const w3 = cleared.body.data.clearLimitOverride;
    t.equal(w3.override, null);
    t.match(w3.previous, { value: 2, setBy: 'ops:alice@example.com' });
    t.match(w3.change, { action: 'clear', hadOverride: true, oldValue: 2, newValue: null, changedBy: 'ops' });
    limits = await call(app, 'GET', `/v1/orgs/${org.id}/limits`, { as: owner });
    t.match(limits.body.groups[0].limits[0], { id: 'platform.blobs_per_org', value: 3, source: 'default', held: 2 });

    const again = await clear({ limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id });
    t.same(
      again.body.data.clearLimitOverride,
      { override: null, previous: null, change: null },
      'clearing nothing records nothing',
    );

    const history = await gql(ops, CHANGES, { targetType: 'org', targetId: org.alias });
    t.same(
      history.body.data.limitOverrideChanges.map((c: any) => [
        c.action,
        c.hadOverride,
        c.oldValue,
        c.newValue,
        c.changedBy,
      ]),
      [
        ['clear', true, 2, null, 'ops'],
        ['set', true, 1, 2, 'ops:alice@example.com'],
        ['set', false, null, 1, 'ops'],
      ],
    );
    t.same(
      history.body.data.limitOverrideChanges.map((c: any) => c.id),
      [w3.change.id, w2.change.id, w1.change.id],
    );
    const page = await gql(ops, CHANGES, { targetType: 'org', targetId: org.id, limit: 1, beforeId: w3.change.id });
    t.same(
      page.body.data.limitOverrideChanges.map((c: any) => c.id),
      [w2.change.id],
      'paging with beforeId',
    );
  });

  t.test('every refusal rule, with its extensions.code; nothing is written', async (t) => {
    const { owner, org } = await freshOrg();
    const { blob } = await createBlob(app, owner, org.id);
    const userId = owner.user.id;
    const cases: [string, Record<string, unknown>][] = [
      ['unknown_limit', { limitId: 'platform.nope', targetType: 'org', targetId: org.id, value: 1 }],
      ['unknown_limit', { limitId: 'Platform.blobs_per_org', targetType: 'org', targetId: org.id, value: 1 }],
      ['fixed_limit', { limitId: 'workflow.sleep_seconds', targetType: 'org', targetId: org.id, value: 10 }],
      ['fixed_limit', { limitId: 'graphdb.query_results', targetType: 'user', targetId: userId, value: 10 }],
      ['level_not_allowed', { limitId: 'platform.orgs_per_user', targetType: 'org', targetId: org.id, value: 5 }],
      ['level_not_allowed', { limitId: 'platform.blobs_per_org', targetType: 'blob', targetId: blob.id, value: 5 }],
      ['level_not_allowed', { limitId: 'graphdb.enabled', targetType: 'blob', targetId: blob.alias, value: true }],
      [
        'level_not_allowed',
        { limitId: 'workflow.running_executions_per_org', targetType: 'blob', targetId: blob.id, value: 5 },
      ],
      ['invalid_value_type', { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: '30' }],
      ['invalid_value_type', { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: 1.5 }],
      ['invalid_value_type', { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: -1 }],
      ['invalid_value_type', { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: null }],
      [
        'invalid_value_type',
        { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: { n: 1 } },
      ],
      ['invalid_value_type', { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id }],
      ['invalid_value_type', { limitId: 'workflow.enabled', targetType: 'org', targetId: org.id, value: 1 }],
      [
        'invalid_value_type',
        { limitId: 'workflow.code_imports', targetType: 'blob', targetId: blob.id, value: ['lodash/fp'] },
      ],
      [
        'invalid_value_type',
        { limitId: 'workflow.code_imports', targetType: 'blob', targetId: blob.id, value: 'lodash' },
      ],
      [
        'invalid_value_type',
        { limitId: 'workflow.execution_retention_days', targetType: 'org', targetId: org.id, value: '90' },
      ],
      [
        'past_most_permissive',
        { limitId: 'workflow.session_objects_per_session', targetType: 'org', targetId: org.id, value: 10_001 },
      ],
      [
        'past_most_permissive',
        { limitId: 'workflow.code_run_seconds', targetType: 'user', targetId: userId, value: 871 },
      ],
      [
        'past_most_permissive',
        { limitId: 'scheduler.min_interval_seconds', targetType: 'blob', targetId: blob.id, value: 59 },
      ],
      ['not_found', { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: 'no-such-org', value: 5 }],
      [
        'not_found',
        {
          limitId: 'platform.blobs_per_org',
          targetType: 'org',
          targetId: '00000000-0000-4000-8000-000000000000',
          value: 5,
        },
      ],
      // A blob's id is not an organization's.
      ['not_found', { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: blob.id, value: 5 }],
      ['not_found', { limitId: 'platform.revisions_per_blob', targetType: 'blob', targetId: org.alias, value: 5 }],
    ];
    const before = await rowCounts();
    for (const [code, vars] of cases) {
      const { status, body } = await set(vars);
      t.equal(status, 200, `${code} ${JSON.stringify(vars)}`);
      t.same(body.data, { setLimitOverride: null });
      t.equal(body.errors?.length, 1);
      t.equal(
        body.errors?.[0]?.extensions?.code,
        code,
        `${code} ${JSON.stringify(vars)}: ${body.errors?.[0]?.message}`,
      );
    }
    // The same rules for a clear of nothing, with the refusal before "nothing to clear".
    const clears: [string, Record<string, unknown>][] = [
      ['unknown_limit', { limitId: 'platform.nope', targetType: 'org', targetId: org.id }],
      ['fixed_limit', { limitId: 'workflow.sleep_seconds', targetType: 'org', targetId: org.id }],
      ['level_not_allowed', { limitId: 'platform.orgs_per_user', targetType: 'org', targetId: org.id }],
      ['not_found', { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: 'no-such-org' }],
    ];
    for (const [code, vars] of clears) {
      const { body } = await clear(vars);
      t.equal(body.errors?.[0]?.extensions?.code, code, `clear ${code}`);
    }
    t.same(await rowCounts(), before, 'no override and no history row was written');
    const limits = await call(app, 'GET', `/v1/orgs/${org.id}/limits`, { as: owner });
    t.ok(
      limits.body.groups.flatMap((g: any) => g.limits).every((l: any) => l.source === 'default'),
      'everything is still the default',
    );
  });

  t.test('a level that is not user, org or blob is refused by the schema', async (t) => {
    const { org } = await freshOrg();
    const { status, body } = await set({
      limitId: 'platform.blobs_per_org',
      targetType: 'revision',
      targetId: org.id,
      value: 1,
    });
    t.equal(status, 400);
    t.match(body.errors?.[0]?.message, /LimitTargetType/);
  });

  t.test('arguments out of bounds and a bad X-Ops-Actor are invalid_argument', async (t) => {
    const { org } = await freshOrg();
    for (const limit of [0, 501]) {
      const { body } = await gql(ops, OVERRIDES, { limit });
      t.equal(body.errors?.[0]?.extensions?.code, 'invalid_argument', `limit ${limit}`);
    }
    t.equal((await gql(ops, CHANGES, { beforeId: 'abc' })).body.errors?.[0]?.extensions?.code, 'invalid_argument');
    t.equal(
      (await gql(ops, OVERRIDES, { targetId: org.alias })).body.errors?.[0]?.extensions?.code,
      'invalid_argument',
      'an alias needs targetType',
    );
    t.equal(
      (await gql(ops, OVERRIDES, { targetType: 'org', targetId: 'no-such-org' })).body.errors?.[0]?.extensions?.code,
      'not_found',
    );
    const before = await rowCounts();
    for (const actor of ['x'.repeat(101), ' ']) {
      const { body } = await set(
        { limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: 4 },
        { authorization: `Bearer ${token}`, 'x-ops-actor': actor },
      );
      t.equal(body.errors?.[0]?.extensions?.code, 'invalid_argument', `actor ${JSON.stringify(actor)}`);
    }
    t.same(await rowCounts(), before);
  });

  t.test('values of every type round-trip: lists, flags, retention null', async (t) => {
    const { owner, org } = await freshOrg();
    const { blob } = await createBlob(app, owner, org.id);
    // Literals in the query text, not variables, go through the scalar's parseLiteral.
    const literal = await gql(
      ops,
      `mutation { setLimitOverride(limitId: "workflow.code_imports", targetType: blob, targetId: "${blob.alias}", value: ["zod", "@scope/pkg"]) { override { value } } }`,
    );
    t.same(literal.body.data.setLimitOverride.override.value, ['zod', '@scope/pkg']);
    const flag = await gql(
      ops,
      `mutation { setLimitOverride(limitId: "graphdb.enabled", targetType: user, targetId: "${owner.user.id}", value: true) { override { value } } }`,
    );
    t.same(flag.body.data.setLimitOverride.override.value, true);
    const forever = await gql(
      ops,
      `mutation { setLimitOverride(limitId: "workflow.execution_retention_days", targetType: org, targetId: "${org.id}", value: null) { override { value } change { hadOverride oldValue newValue } } }`,
    );
    t.same(forever.body.data.setLimitOverride, {
      override: { value: null },
      change: { hadOverride: false, oldValue: null, newValue: null },
    });
    const wrong = await gql(
      ops,
      `mutation { setLimitOverride(limitId: "platform.revisions_per_blob", targetType: blob, targetId: "${blob.id}", value: 2.5) { override { value } } }`,
    );
    t.equal(wrong.body.errors?.[0]?.extensions?.code, 'invalid_value_type');

    const after = await set({
      limitId: 'workflow.execution_retention_days',
      targetType: 'org',
      targetId: org.id,
      value: 30,
    });
    t.match(
      after.body.data.setLimitOverride.change,
      { hadOverride: true, oldValue: null, newValue: 30 },
      'null was a value before',
    );

    const inForce = await gql(ops, IN_FORCE, { targetType: 'blob', targetId: blob.alias });
    const entries = new Map(
      inForce.body.data.limitsInForce.groups.flatMap((g: any) => g.limits.map((l: any) => [l.id, l])),
    );
    t.match(entries.get('workflow.code_imports'), { value: ['zod', '@scope/pkg'], source: 'blob' });
    t.match(entries.get('workflow.execution_retention_days'), { value: 30, source: 'org' });
    const orgInForce = await gql(ops, IN_FORCE, { targetType: 'org', targetId: org.id });
    const graph = orgInForce.body.data.limitsInForce.groups.find((g: any) => g.id === 'svc.graph.graphdb');
    t.match(graph.limits[0], { id: 'graphdb.enabled', value: true, source: 'user' });
  });

  t.test('several writes in one request: each is its own, a refused one answers null', async (t) => {
    const { org } = await freshOrg();
    const { status, body } = await gql(
      ops,
      `mutation {
      a: setLimitOverride(limitId: "platform.blobs_per_org", targetType: org, targetId: "${org.id}", value: 7) { override { value } }
      b: setLimitOverride(limitId: "platform.orgs_per_user", targetType: org, targetId: "${org.id}", value: 7) { override { value } }
      c: setLimitOverride(limitId: "platform.revisions_per_blob", targetType: org, targetId: "${org.id}", value: 4) { override { value } }
    }`,
    );
    t.equal(status, 200);
    t.same(body.data, { a: { override: { value: 7 } }, b: null, c: { override: { value: 4 } } });
    t.same(
      body.errors?.map((e) => [e.extensions?.code, (e as any).path]),
      [['level_not_allowed', ['b']]],
    );
    const stored = await gql(ops, OVERRIDES, { targetType: 'org', targetId: org.id });
    t.same(stored.body.data.limitOverrides.map((o: any) => [o.limitId, o.value]).sort(), [
      ['platform.blobs_per_org', 7],
      ['platform.revisions_per_blob', 4],
    ]);
  });

  t.test('limitsInForce answers what the limits routes answer, with the ownership chain', async (t) => {
    const { owner, org } = await freshOrg();
    const { blob } = await createBlob(app, owner, org.id, { type: 'svc.compute.scheduler' });
    await setOverride(app, 'platform.revisions_per_blob', 'user', owner.user.id, 7);
    await setOverride(app, 'scheduler.schedules_per_revision', 'org', org.id, 20);
    await setOverride(app, 'scheduler.run_retention_days', 'blob', blob.id, null);

    const cases = [
      {
        targetType: 'user',
        targetId: owner.user.id,
        url: `/v1/users/${owner.user.id}/limits`,
        chain: { userId: owner.user.id, orgId: null, blobId: null },
        alias: null,
        blobType: null,
      },
      {
        targetType: 'org',
        targetId: org.alias,
        url: `/v1/orgs/${org.id}/limits`,
        chain: { userId: owner.user.id, orgId: org.id, blobId: null },
        alias: org.alias,
        blobType: null,
      },
      {
        targetType: 'blob',
        targetId: blob.id,
        url: `/v1/blobs/${org.id}/${blob.id}/limits`,
        chain: { userId: owner.user.id, orgId: org.id, blobId: blob.id },
        alias: blob.alias,
        blobType: 'svc.compute.scheduler',
      },
    ];
    for (const c of cases) {
      const rest = await call(app, 'GET', c.url, { as: owner });
      t.equal(rest.status, 200);
      const { status, body } = await gql(ops, IN_FORCE, { targetType: c.targetType, targetId: c.targetId });
      t.equal(status, 200);
      const inForce = body.data.limitsInForce;
      const id = c.targetType === 'user' ? owner.user.id : c.targetType === 'org' ? org.id : blob.id;
      t.same(
        { ...inForce, groups: undefined },
        { targetType: c.targetType, targetId: id, alias: c.alias, blobType: c.blobType, ...c.chain, groups: undefined },
        c.targetType,
      );
      t.same(inForce.groups, camelGroups(rest.body.groups), `${c.targetType}: the same groups and entries as REST`);
    }
    const blobRead = await gql(ops, IN_FORCE, { targetType: 'blob', targetId: blob.alias });
    t.same(
      blobRead.body.data.limitsInForce.groups.map((g: any) => g.id),
      ['platform', 'svc.compute.scheduler'],
    );
    t.match(blobRead.body.data.limitsInForce.groups[0].limits[0], {
      id: 'platform.revisions_per_blob',
      value: 7,
      source: 'user',
      held: 1,
    });

    const missing = await gql(ops, IN_FORCE, { targetType: 'user', targetId: 'nobody-here' });
    t.equal(missing.body.errors?.[0]?.extensions?.code, 'not_found');
  });

  t.test('an organization that changes owner follows the new owner in limitsInForce', async (t) => {
    const { owner, org } = await freshOrg();
    const heir = await signInAnonymous(app, { defaultLimits: true });
    await set({ limitId: 'platform.blobs_per_org', targetType: 'user', targetId: owner.user.id, value: 1 });
    await set({ limitId: 'platform.blobs_per_org', targetType: 'user', targetId: heir.user.id, value: 6 });
    let read = await gql(ops, IN_FORCE, { targetType: 'org', targetId: org.id });
    t.match(read.body.data.limitsInForce, { userId: owner.user.id });
    t.match(read.body.data.limitsInForce.groups[0].limits[0], {
      id: 'platform.blobs_per_org',
      value: 1,
      source: 'user',
    });
    const moved = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: owner, body: { owner_id: heir.user.id } });
    t.equal(moved.status, 200);
    read = await gql(ops, IN_FORCE, { targetType: 'org', targetId: org.id });
    t.match(read.body.data.limitsInForce, { userId: heir.user.id });
    t.match(read.body.data.limitsInForce.groups[0].limits[0], {
      id: 'platform.blobs_per_org',
      value: 6,
      source: 'user',
    });
  });

  t.test('limitOverrides lists what is stored, with filters, and flags a stored value refused today', async (t) => {
    const { owner, org } = await freshOrg();
    const { blob } = await createBlob(app, owner, org.id);
    await set({ limitId: 'platform.revisions_per_blob', targetType: 'org', targetId: org.id, value: 4 });
    await set({ limitId: 'workflow.sessions_per_revision', targetType: 'org', targetId: org.id, value: 12 });
    await set({ limitId: 'platform.revisions_per_blob', targetType: 'blob', targetId: blob.id, value: 5 });
    // A row no validation would accept (written by hand, or before a catalog change).
    await setOverride(app, 'workflow.sleep_seconds', 'org', org.id, 5);

    const byOrg = await gql(ops, OVERRIDES, { targetType: 'org', targetId: org.alias });
    t.same(byOrg.body.data.limitOverrides.map((o: any) => [o.limitId, o.value, o.problem]).sort(), [
      ['platform.revisions_per_blob', 4, null],
      ['workflow.sessions_per_revision', 12, null],
      ['workflow.sleep_seconds', 5, 'fixed_limit'],
    ]);
    const byLimit = await gql(ops, OVERRIDES, { limitId: 'platform.revisions_per_blob' });
    const mine = byLimit.body.data.limitOverrides.filter((o: any) => o.targetId === org.id || o.targetId === blob.id);
    t.same(mine.map((o: any) => [o.targetType, o.value]).sort(), [
      ['blob', 5],
      ['org', 4],
    ]);
    t.ok(byLimit.body.data.limitOverrides.every((o: any) => o.limitId === 'platform.revisions_per_blob'));
    const byBlob = await gql(ops, OVERRIDES, { targetType: 'blob', targetId: blob.alias });
    t.same(byBlob.body.data.limitOverrides, [
      {
        limitId: 'platform.revisions_per_blob',
        targetType: 'blob',
        targetId: blob.id,
        value: 5,
        setBy: 'ops',
        setAt: byBlob.body.data.limitOverrides[0].setAt,
        problem: null,
      },
    ]);
    const limited = await gql(ops, OVERRIDES, { limit: 2 });
    t.equal(limited.body.data.limitOverrides.length, 2);

    // Clearing is how the operator removes a stale row, even on a limit that cannot be set.
    const cleared = await clear({ limitId: 'workflow.sleep_seconds', targetType: 'org', targetId: org.id });
    t.match(cleared.body.data.clearLimitOverride, {
      override: null,
      previous: { value: 5, problem: 'fixed_limit' },
      change: { action: 'clear', oldValue: 5 },
    });
    const after = await gql(ops, OVERRIDES, { targetType: 'org', targetId: org.id });
    t.equal(after.body.data.limitOverrides.length, 2);
  });

  t.test('deleting a target deletes its overrides; its history stays readable by id', async (t) => {
    const { owner, org } = await freshOrg();
    await set({ limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value: 2 });
    t.equal((await call(app, 'DELETE', `/v1/orgs/${org.id}`, { as: owner })).status, 200);
    t.same((await gql(ops, OVERRIDES, { targetType: 'org', targetId: org.id })).body.data.limitOverrides, []);
    const history = await gql(ops, CHANGES, { targetId: org.id });
    t.same(
      history.body.data.limitOverrideChanges.map((c: any) => [c.action, c.newValue]),
      [['set', 2]],
    );
    t.equal(
      (await gql(ops, CHANGES, { targetType: 'org', targetId: org.alias })).body.errors?.[0]?.extensions?.code,
      'not_found',
      'the alias names nothing now',
    );
  });

  t.test('simultaneous sets on one target queue up: each history row replaced the value before it', async (t) => {
    const { org } = await freshOrg();
    const values = [11, 12, 13, 14, 15, 16, 17, 18];
    const results = await Promise.all(
      values.map((value) => set({ limitId: 'platform.blobs_per_org', targetType: 'org', targetId: org.id, value })),
    );
    t.ok(results.every((r) => r.body.errors === undefined));
    const history = (
      await gql(ops, CHANGES, { targetType: 'org', targetId: org.id })
    ).body.data.limitOverrideChanges.reverse();
    t.equal(history.length, values.length);
    t.equal(history[0].hadOverride, false);
    for (let i = 1; i < history.length; i++)
      t.equal(history[i].oldValue, history[i - 1].newValue, `change ${i} replaced the value of change ${i - 1}`);
    const stored = (await gql(ops, OVERRIDES, { targetType: 'org', targetId: org.id })).body.data.limitOverrides;
    t.equal(stored[0].value, history.at(-1).newValue);
  });
});
