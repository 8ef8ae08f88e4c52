/**
 * Find by id (`GET /v1/find/:id`, docs/resources.md): a bare id of any resource, or an
 * organization's or blob's alias, answers what it is and where it belongs (with the blob's type);
 * what the caller may not read is 404, like an id that names nothing.
 */
import t from 'tap';
import { buildTestApp, call, signInAnonymous, type Caller } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import { createWorkflow, runGraph } from './helpers/runner.ts';

const { app } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);

const find = (caller: Caller, id: string) => call(app, 'GET', `/v1/find/${encodeURIComponent(id)}`, { as: caller });

const flow = await createWorkflow(app, alice);
const execution = await runGraph(app, alice, flow, {
  start: 'a',
  nodes: { a: { processor: 'logic.code', config: { code: 'export default (input) => input' } } },
});
const blob = (await call(app, 'GET', `/v1/blobs/${flow.orgId}/${flow.blobId}`, { as: alice })).body.blob;

t.test('each kind of id answers what it is and the chain above it, with the blob type', async (t) => {
  const base = { org_id: flow.orgId, blob_id: blob.id, blob_type: 'svc.compute.workflow', revision_id: flow.rev };
  const cases: Array<[string, Record<string, unknown>]> = [
    [
      flow.orgId,
      {
        kind: 'organization',
        id: flow.orgId,
        org_id: flow.orgId,
        blob_id: null,
        blob_type: null,
        revision_id: null,
        session_id: null,
      },
    ],
    [blob.id, { ...base, kind: 'blob', id: blob.id, revision_id: null, session_id: null }],
    [flow.rev, { ...base, kind: 'revision', id: flow.rev, session_id: null }],
    [execution.session_id, { ...base, kind: 'session', id: execution.session_id, session_id: execution.session_id }],
    [execution.definition_id, { ...base, kind: 'definition', id: execution.definition_id, session_id: null }],
    [execution.id, { ...base, kind: 'execution', id: execution.id, session_id: execution.session_id }],
  ];
  for (const [id, found] of cases) {
    const res = await find(alice, id);
    t.equal(res.status, 200, found.kind as string);
    t.strictSame(res.body, { status: 'success', found }, found.kind as string);
  }
});

t.test("an organization's or a blob's alias answers the id it names", async (t) => {
  const org = await createOrg(app, alice);
  const { blob: model } = await createBlob(app, alice, org.id, { type: 'svc.model.onnx' });
  t.match((await find(alice, org.alias)).body.found, { kind: 'organization', id: org.id });
  t.match((await find(alice, model.alias)).body.found, {
    kind: 'blob',
    id: model.id,
    org_id: org.id,
    blob_type: 'svc.model.onnx',
  });
});

t.test('what the caller may not read, and what does not exist, is 404', async (t) => {
  for (const id of [flow.orgId, blob.id, blob.alias, flow.rev, execution.id, execution.session_id]) {
    const res = await find(bob, id);
    t.equal(res.status, 404, id);
    t.equal(res.body.error, 'not_found');
  }
  const res = await find(alice, '00000000-0000-4000-8000-000000000000');
  t.equal(res.status, 404);
  t.equal(res.body.error, 'not_found');
});
