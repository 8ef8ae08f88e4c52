import t from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous } from './helpers/app.ts';
import { assertRefusal, commandTransports, TRANSPORTS, type Transport } from './helpers/command-transports.ts';
import { createBlob, createOrg, createRevision, uniqueAlias } from './helpers/resources.ts';

const { app } = await buildTestApp(t);
const transports = await commandTransports(t, app);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const carol = await signInAnonymous(app);
const org = await createOrg(app, alice);

const CODE = 'export default async (input, ctx) => ({ hello: input.name })';
const GRAPH = {
  start: 'greet',
  nodes: {
    greet: { processor: 'logic.code', config: { code: CODE }, routes: { success: 'pause', failure: 'report' } },
    pause: { processor: 'logic.sleep', config: { seconds: 2 }, routes: { success: null } },
    report: { processor: 'thread.post', config: { text: 'greeting failed' } },
  },
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A fresh workflow blob of Alice's, public so that Bob can read it but not write it. */
async function freshRevision(
  visibility: 'public' | 'private' = 'public',
): Promise<{ blobId: string; revisionId: string }> {
  const { blob, revision } = await createBlob(app, alice, org.id, { visibility });
  return { blobId: blob.id, revisionId: revision.id };
}

const run = transports.run;

async function held(revisionId: string): Promise<Record<string, number>> {
  const res = await call(app, 'GET', `/v1/revisions/${revisionId}`, { as: alice });
  return res.body.revision.held;
}

for (const via of TRANSPORTS) {
  t.test(`over ${via}`, async (t) => {
    const { blobId, revisionId } = await freshRevision();

    t.test('check_definition: a valid graph is a success verdict with warnings', async (t) => {
      const answer = await run(via, bob, revisionId, 'check_definition', { graph: GRAPH });
      t.same(answer, { status: 200, body: { status: 'success', warnings: [] } });
    });

    t.test('check_definition: an invalid graph is HTTP 200 with status failure, errors and warnings', async (t) => {
      const graph = {
        start: 'a',
        nodes: { a: { processor: 'logic.sleep', config: { seconds: -1 } }, b: { processor: 'thread.post' } },
      };
      const answer = await run(via, bob, revisionId, 'check_definition', { graph });
      t.equal(answer.status, 200);
      t.same(answer.body, {
        status: 'failure',
        errors: [
          { code: 'invalid_config', node: 'a', field: 'config.seconds', message: answer.body.errors[0].message },
        ],
        warnings: [{ code: 'unreachable_node', node: 'b', field: null, message: answer.body.warnings[0].message }],
      });
      t.notOk('rpcCode' in answer, 'a verdict is a result, not a JSON-RPC error');
    });

    t.test('create, list, delete', async (t) => {
      const created = await run(via, alice, revisionId, 'create_definition', {
        alias: 'hello',
        category: 'workflow',
        graph: GRAPH,
      });
      t.equal(created.status, 200);
      const definition = created.body.definition;
      t.same(created.body, {
        status: 'success',
        definition: {
          id: definition.id,
          alias: 'hello',
          category: 'workflow',
          revision_id: revisionId,
          graph: GRAPH,
          created_at: definition.created_at,
        },
        warnings: [],
      });
      t.match(definition.id, UUID);
      t.ok(Date.parse(definition.created_at) > 0);

      const play = await run(via, alice, revisionId, 'create_definition', { category: 'playground', graph: GRAPH });
      t.equal(play.status, 200);
      t.equal(play.body.definition.alias, null, 'the alias is optional');
      t.same(await held(revisionId), {
        'workflow.definitions_per_revision': 1,
        'workflow.playgrounds_per_revision': 1,
        'workflow.sessions_per_revision': 0,
      });

      const all = await run(via, bob, revisionId, 'list_definitions');
      t.same(all, { status: 200, body: { status: 'success', definitions: [definition, play.body.definition] } });
      const playgrounds = await run(via, bob, revisionId, 'list_definitions', { category: 'playground' });
      t.same(playgrounds.body.definitions, [play.body.definition]);
      const workflows = await run(via, bob, revisionId, 'list_definitions', { category: 'workflow' });
      t.same(workflows.body.definitions, [definition]);

      const byAlias = await run(via, alice, revisionId, 'delete_definition', { definition_id: 'hello' });
      t.same(byAlias, { status: 200, body: { status: 'success', definition } });
      const byId = await run(via, alice, revisionId, 'delete_definition', { definition_id: play.body.definition.id });
      t.same(byId.body.definition, play.body.definition);
      assertRefusal(
        t,
        await run(via, alice, revisionId, 'delete_definition', { definition_id: 'hello' }),
        404,
        'not_found',
        via,
      );
      assertRefusal(
        t,
        await run(via, alice, revisionId, 'delete_definition', { definition_id: definition.id }),
        404,
        'not_found',
        via,
      );
      t.same((await run(via, bob, revisionId, 'list_definitions')).body.definitions, []);
      t.same(await held(revisionId), {
        'workflow.definitions_per_revision': 0,
        'workflow.playgrounds_per_revision': 0,
        'workflow.sessions_per_revision': 0,
      });
    });

    t.test('create_definition warns but accepts a graph with only warnings', async (t) => {
      const graph = { start: 'a', nodes: { a: { processor: 'thread.post' }, orphan: { processor: 'thread.post' } } };
      const created = await run(via, alice, revisionId, 'create_definition', { category: 'playground', graph });
      t.equal(created.status, 200);
      t.match(created.body.warnings, [{ code: 'unreachable_node', node: 'orphan', field: null }]);
      await run(via, alice, revisionId, 'delete_definition', { definition_id: created.body.definition.id });
    });

    t.test(
      'create_definition refuses an invalid graph with invalid_definition carrying errors, and takes no slot',
      async (t) => {
        const graph = {
          start: 'a',
          nodes: { a: { processor: 'logic.code', config: { code: 'export default (' }, routes: { success: 'ghost' } } },
        };
        const answer = await run(via, alice, revisionId, 'create_definition', {
          alias: 'broken',
          category: 'workflow',
          graph,
        });
        assertRefusal(t, answer, 400, 'invalid_definition', via);
        t.match(answer.body.errors, [
          { code: 'invalid_code', node: 'a', field: 'config.code', message: /SyntaxError/ },
          { code: 'route_target_not_found', node: 'a', field: 'routes.success', message: String },
        ]);
        t.equal(answer.body.errors.length, 2);
        t.same((await run(via, bob, revisionId, 'list_definitions')).body.definitions, []);
        t.equal((await held(revisionId))['workflow.definitions_per_revision'], 0);
      },
    );

    t.test('aliases: unique within the revision, grammar enforced, free in another revision', async (t) => {
      const alias = uniqueAlias('def');
      t.equal(
        (await run(via, alice, revisionId, 'create_definition', { alias, category: 'workflow', graph: GRAPH })).status,
        200,
      );
      assertRefusal(
        t,
        await run(via, alice, revisionId, 'create_definition', { alias, category: 'playground', graph: GRAPH }),
        409,
        'alias_taken',
        via,
      );
      const other = await freshRevision();
      t.equal(
        (await run(via, alice, other.revisionId, 'create_definition', { alias, category: 'workflow', graph: GRAPH }))
          .status,
        200,
      );
      for (const bad of ['ab', 'Upper', '-dash', 'me', '0f8fad5b-d9cb-469f-a165-70867728950e']) {
        assertRefusal(
          t,
          await run(via, alice, revisionId, 'create_definition', { alias: bad, category: 'workflow', graph: GRAPH }),
          400,
          'invalid_request_body',
          via,
        );
      }
      await run(via, alice, revisionId, 'delete_definition', { definition_id: alias });
    });

    t.test('params are strict', async (t) => {
      const cases: Array<[string, Record<string, unknown>]> = [
        ['create_definition', { category: 'workflow' }],
        ['create_definition', { category: 'draft', graph: GRAPH }],
        ['create_definition', { category: 'workflow', graph: 'not an object' }],
        ['create_definition', { category: 'workflow', graph: GRAPH, extra: 1 }],
        ['check_definition', {}],
        ['check_definition', { graph: [GRAPH] }],
        ['list_definitions', { category: 'other' }],
        ['list_definitions', { cursor: 'x' }],
        ['delete_definition', {}],
      ];
      for (const [command, params] of cases) {
        assertRefusal(t, await run(via, alice, revisionId, command, params), 400, 'invalid_request_body', via);
      }
    });

    t.test('roles: read may list and check, write is needed to create and delete', async (t) => {
      const created = await run(via, alice, revisionId, 'create_definition', { category: 'workflow', graph: GRAPH });
      assertRefusal(
        t,
        await run(via, bob, revisionId, 'create_definition', { category: 'workflow', graph: GRAPH }),
        403,
        'forbidden',
        via,
      );
      assertRefusal(
        t,
        await run(via, bob, revisionId, 'delete_definition', { definition_id: created.body.definition.id }),
        403,
        'forbidden',
        via,
      );
      t.equal((await run(via, bob, revisionId, 'list_definitions')).body.definitions.length, 1);
      await run(via, alice, revisionId, 'delete_definition', { definition_id: created.body.definition.id });
    });

    t.test('a revision the caller cannot read is not_found for every definition command', async (t) => {
      const hidden = await freshRevision('private');
      for (const [command, params] of [
        ['list_definitions', {}],
        ['check_definition', { graph: GRAPH }],
        ['create_definition', { category: 'workflow', graph: GRAPH }],
        ['delete_definition', { definition_id: 'x' }],
      ] as const) {
        assertRefusal(t, await run(via, carol, hidden.revisionId, command, params), 404, 'not_found', via);
      }
    });

    t.test('a scheduler revision has no definition commands: unknown_command', async (t) => {
      const { revision } = await createBlob(app, alice, org.id, { type: 'svc.compute.scheduler' });
      for (const command of ['list_definitions', 'create_definition', 'delete_definition', 'check_definition']) {
        assertRefusal(
          t,
          await run(via, alice, revision.id, command, { graph: GRAPH, category: 'workflow' }),
          404,
          'unknown_command',
          via,
        );
      }
    });

    t.test('quota workflow.definitions_per_revision: exact limit object, freed by delete', async (t) => {
      const { blobId: quotaBlob, revisionId: rev } = await freshRevision();
      await setOverride(app, 'workflow.definitions_per_revision', 'blob', quotaBlob, 2);
      const first = await run(via, alice, rev, 'create_definition', { category: 'workflow', graph: GRAPH });
      await run(via, alice, rev, 'create_definition', { category: 'workflow', graph: GRAPH });
      const refused = await run(via, alice, rev, 'create_definition', {
        alias: 'third',
        category: 'workflow',
        graph: GRAPH,
      });
      assertRefusal(t, refused, 400, 'limit_exceeded', via);
      t.same(refused.body.limit, { id: 'workflow.definitions_per_revision', value: 2, held: 2 });
      // The other category has a quota of its own.
      t.equal((await run(via, alice, rev, 'create_definition', { category: 'playground', graph: GRAPH })).status, 200);
      await run(via, alice, rev, 'delete_definition', { definition_id: first.body.definition.id });
      const again = await run(via, alice, rev, 'create_definition', {
        alias: 'third',
        category: 'workflow',
        graph: GRAPH,
      });
      t.equal(again.status, 200, 'deleting freed the slot; the refused alias was never taken');
    });

    t.test('quota workflow.playgrounds_per_revision: exact limit object', async (t) => {
      const { blobId: quotaBlob, revisionId: rev } = await freshRevision();
      await setOverride(app, 'workflow.playgrounds_per_revision', 'blob', quotaBlob, 1);
      await run(via, alice, rev, 'create_definition', { category: 'playground', graph: GRAPH });
      const refused = await run(via, alice, rev, 'create_definition', { category: 'playground', graph: GRAPH });
      assertRefusal(t, refused, 400, 'limit_exceeded', via);
      t.same(refused.body.limit, { id: 'workflow.playgrounds_per_revision', value: 1, held: 1 });
      t.equal((await run(via, alice, rev, 'create_definition', { category: 'workflow', graph: GRAPH })).status, 200);
    });

    t.test('a graph failing each validation rule names the node and field', async (t) => {
      const sleep = { processor: 'logic.sleep', config: { seconds: 1 } };
      const cases: Array<[string, unknown, { code: string; node: string | null; field: string | null }]> = [
        [
          'start missing',
          { start: 'nowhere', nodes: { a: sleep } },
          { code: 'start_not_found', node: null, field: 'start' },
        ],
        [
          'route to a missing node',
          { start: 'a', nodes: { a: { ...sleep, routes: { success: 'b' } } } },
          { code: 'route_target_not_found', node: 'a', field: 'routes.success' },
        ],
        [
          'route the processor never takes',
          { start: 'a', nodes: { a: { ...sleep, routes: { failure: null } } } },
          { code: 'unknown_route', node: 'a', field: 'routes.failure' },
        ],
        [
          'unknown processor',
          { start: 'a', nodes: { a: { processor: 'logic.nope' } } },
          { code: 'unknown_processor', node: 'a', field: 'processor' },
        ],
        [
          'config schema',
          {
            start: 'a',
            nodes: { a: { processor: 'object.put', config: { alias: 'result', value: 1, colour: 'red' } } },
          },
          { code: 'invalid_config', node: 'a', field: 'config.colour' },
        ],
        [
          'node shape',
          { start: 'a', nodes: { a: { processor: 'thread.post', then: 'b' } } },
          { code: 'invalid_node', node: 'a', field: 'then' },
        ],
        [
          'graph shape',
          { start: 'a', nodes: { a: sleep }, version: 2 },
          { code: 'invalid_graph', node: null, field: 'version' },
        ],
        [
          'logic.code syntax error',
          {
            start: 'a',
            nodes: { a: { processor: 'logic.code', config: { code: 'export default async (input => input' } } },
          },
          { code: 'invalid_code', node: 'a', field: 'config.code' },
        ],
        [
          'logic.code disallowed import',
          {
            start: 'a',
            nodes: { a: { processor: 'logic.code', config: { code: `import m from '@ws/math';\n${CODE}` } } },
          },
          { code: 'invalid_code', node: 'a', field: 'config.code' },
        ],
      ];
      for (const [name, graph, issue] of cases) {
        const checked = await run(via, alice, revisionId, 'check_definition', {
          graph: graph as Record<string, unknown>,
        });
        t.equal(checked.status, 200, name);
        t.equal(checked.body.status, 'failure', name);
        t.same(
          checked.body.errors.map(({ code, node, field }: Record<string, unknown>) => ({ code, node, field })),
          [issue],
          name,
        );
        const created = await run(via, alice, revisionId, 'create_definition', {
          category: 'workflow',
          graph: graph as Record<string, unknown>,
        });
        assertRefusal(t, created, 400, 'invalid_definition', via);
        t.same(created.body.errors, checked.body.errors, `${name}: create refuses with the errors check reports`);
      }
    });

    t.test("imports follow workflow.code_imports in force for the revision's blob", async (t) => {
      const graph = {
        start: 'a',
        nodes: { a: { processor: 'logic.code', config: { code: `import { v4 } from '@ws/uuid';\n${CODE}` } } },
      };
      const refused = await run(via, alice, revisionId, 'check_definition', { graph });
      t.match(refused.body, {
        status: 'failure',
        errors: [
          {
            code: 'invalid_code',
            node: 'a',
            field: 'config.code',
            message: /"@ws\/uuid" is not granted by workflow\.code_imports/,
          },
        ],
      });
      const granted = await freshRevision();
      await setOverride(app, 'workflow.code_imports', 'blob', granted.blobId, ['@ws/uuid']);
      t.same((await run(via, alice, granted.revisionId, 'check_definition', { graph })).body, {
        status: 'success',
        warnings: [],
      });
      t.equal(
        (await run(via, alice, granted.revisionId, 'create_definition', { category: 'workflow', graph })).status,
        200,
      );
      t.not(blobId, granted.blobId);
    });
  });
}

t.test('concurrent creates never take a revision past its quota', async (t) => {
  const { blobId, revisionId } = await freshRevision();
  await setOverride(app, 'workflow.definitions_per_revision', 'blob', blobId, 3);
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      run((i % 2 === 0 ? 'rest' : 'rpc') as Transport, alice, revisionId, 'create_definition', {
        category: 'workflow',
        graph: GRAPH,
      }),
    ),
  );
  t.equal(answers.filter((a) => a.status === 200).length, 3);
  const refusals = answers.filter((a) => a.status !== 200);
  t.equal(refusals.length, 5);
  for (const refusal of refusals)
    t.same(refusal.body.limit, { id: 'workflow.definitions_per_revision', value: 3, held: 3 });
  t.equal((await held(revisionId))['workflow.definitions_per_revision'], 3);
});

t.test('Create Revision with copy_from copies the definitions', async (t) => {
  const { blobId, revisionId: source } = await freshRevision();
  const a = await run('rest', alice, source, 'create_definition', {
    alias: 'first',
    category: 'workflow',
    graph: GRAPH,
  });
  const b = await run('rest', alice, source, 'create_definition', {
    category: 'playground',
    graph: { start: 'x', nodes: { x: { processor: 'thread.post' } } },
  });
  const blob = await call(app, 'GET', `/v1/revisions/${source}`, { as: alice });
  const copy = await createRevision(app, alice, org.id, blob.body.revision.blob_id, { copy_from: source });
  t.not(copy.id, source);

  const copied = (await run('rpc', alice, copy.id, 'list_definitions')).body.definitions;
  const original = [a.body.definition, b.body.definition];
  t.equal(copied.length, 2);
  copied.forEach((definition: Record<string, unknown>, i: number) => {
    const { id, revision_id, ...rest } = original[i];
    t.not(definition.id, id, 'a copy has an id of its own');
    t.equal(definition.revision_id, copy.id);
    t.same(
      { ...definition, id, revision_id },
      { ...rest, id, revision_id },
      'alias, category, graph and created_at are kept',
    );
  });
  t.same(await held(copy.id), {
    'workflow.definitions_per_revision': 1,
    'workflow.playgrounds_per_revision': 1,
    'workflow.sessions_per_revision': 0,
  });

  // The copies are independent: deleting one leaves the source's alone, and the alias resolves per revision.
  t.equal(
    (await run('rest', alice, copy.id, 'delete_definition', { definition_id: 'first' })).body.definition.id,
    copied[0].id,
  );
  t.same((await run('rest', alice, source, 'list_definitions')).body.definitions, original);

  // A copy takes no slot through the quota: with the limit lowered under what the source holds, the
  // copy is still whole, and Create Definition refuses in it until it is back under the limit.
  await setOverride(app, 'workflow.definitions_per_revision', 'blob', blobId, 0);
  const lowered = await createRevision(app, alice, org.id, blobId, { copy_from: source });
  t.equal(
    (await run('rest', alice, lowered.id, 'list_definitions', { category: 'workflow' })).body.definitions.length,
    1,
  );
  const refused = await run('rpc', alice, lowered.id, 'create_definition', { category: 'workflow', graph: GRAPH });
  assertRefusal(t, refused, 400, 'limit_exceeded', 'rpc');
  t.same(refused.body.limit, { id: 'workflow.definitions_per_revision', value: 0, held: 1 });

  // A revision created without copy_from starts empty.
  const empty = await createRevision(app, alice, org.id, blobId);
  t.same((await run('rest', alice, empty.id, 'list_definitions')).body.definitions, []);
});
