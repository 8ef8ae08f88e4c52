/** An organization: its blobs (type, visibility), and a form to create one. */
import { useState, type FormEvent } from 'react';
import { ok } from '../api/service.ts';
import { useLoad } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { Link, navigate, seg } from '../router.tsx';
import { Empty, Loading, Refusal } from '../ui/states.tsx';

const TYPES = [
  'svc.compute.workflow',
  'svc.compute.scheduler',
  'svc.model.onnx',
  'svc.graph.graphdb',
  'svc.dataset.nlp',
] as const;

export function OrgPage({ orgId }: { orgId: string }) {
  const service = useService();
  const org = useLoad(() => ok(service.rest.GET('/v1/orgs/{id}', { params: { path: { id: orgId } } })), orgId);
  const blobs = useLoad(() => ok(service.rest.GET('/v1/orgs/{id}/blobs', { params: { path: { id: orgId } } })), orgId);
  const [alias, setAlias] = useState('');
  const [type, setType] = useState<(typeof TYPES)[number]>('svc.compute.workflow');
  const [error, setError] = useState<unknown>(null);

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    try {
      const { blob } = await ok(
        service.rest.POST('/v1/blobs/{org_id}', {
          params: { path: { org_id: orgId } },
          body: { type, alias: alias.trim() },
        }),
      );
      navigate(`/orgs/${seg(orgId)}/blobs/${seg(blob.id)}`);
    } catch (caught) {
      setError(caught);
    }
  };

  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/">Organizations</Link>
      </nav>
      <h1>Organization {org.state === 'ready' ? org.data.org.alias : orgId}</h1>
      {org.state === 'error' && <Refusal error={org.error} />}
      <p>
        <Link to={`/orgs/${seg(orgId)}/limits`}>Limits of this organization</Link> ·{' '}
        <Link to={`/orgs/${seg(orgId)}/access`}>Members and API keys</Link>
      </p>
      <h2>Blobs</h2>
      {blobs.state === 'loading' && <Loading what="blobs" />}
      {blobs.state === 'error' && <Refusal error={blobs.error} />}
      {blobs.state === 'ready' &&
        (blobs.data.blobs.length === 0 ? (
          <Empty>No blob yet: create one below.</Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Alias</th>
                <th scope="col">Type</th>
                <th scope="col">Visibility</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {blobs.data.blobs.map((blob) => (
                <tr key={blob.id}>
                  <td>
                    <Link to={`/orgs/${seg(orgId)}/blobs/${seg(blob.id)}`}>{blob.alias}</Link>
                  </td>
                  <td>{blob.type}</td>
                  <td>{blob.visibility}</td>
                  <td>{blob.status}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      <section aria-labelledby="new-blob">
        <h2 id="new-blob">New blob</h2>
        <form onSubmit={(event) => void create(event)} className="inline">
          <label htmlFor="blob-type">Type</label>
          <select id="blob-type" value={type} onChange={(e) => setType(e.target.value as (typeof TYPES)[number])}>
            {TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
          <label htmlFor="blob-alias">Alias</label>
          <input
            id="blob-alias"
            value={alias}
            onChange={(e) => setAlias(e.target.value)}
            required
            placeholder="acme.flows"
          />
          <button type="submit">Create blob</button>
        </form>
        {error !== null && <Refusal error={error} action="Creating the blob" />}
      </section>
    </main>
  );
}
