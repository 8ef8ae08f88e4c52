/** A blob: its type and visibility, and its revisions, paged with the API's cursor. */
import { ok } from '../api/service.ts';
import { useLoad, usePages } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { revisionPath } from '../api/places.ts';
import { Link, seg } from '../router.tsx';
import { Empty, Loading, More, Refusal, Time } from '../ui/states.tsx';

export function BlobPage({ orgId, blobId }: { orgId: string; blobId: string }) {
  const service = useService();
  const path = { org_id: orgId, blob_id: blobId };
  const blob = useLoad(
    () => ok(service.rest.GET('/v1/blobs/{org_id}/{blob_id}', { params: { path } })),
    orgId + blobId,
  );
  const revisions = usePages(async (cursor) => {
    const page = await ok(
      service.rest.GET('/v1/blobs/{org_id}/{blob_id}/revisions', { params: { path, query: cursor ? { cursor } : {} } }),
    );
    return { items: page.revisions, next: page.cursor ?? null };
  }, orgId + blobId);

  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/">Organizations</Link> / <Link to={`/orgs/${seg(orgId)}`}>Organization</Link>
      </nav>
      <h1>Blob {blob.state === 'ready' ? blob.data.blob.alias : blobId}</h1>
      {blob.state === 'error' && <Refusal error={blob.error} />}
      {blob.state === 'ready' && (
        <dl className="facts">
          <dt>Type</dt>
          <dd>{blob.data.blob.type}</dd>
          <dt>Visibility</dt>
          <dd>{blob.data.blob.visibility}</dd>
          <dt>Id</dt>
          <dd>
            <code>{blob.data.blob.id}</code>
          </dd>
        </dl>
      )}
      <p>
        <Link to={`/orgs/${seg(orgId)}/blobs/${seg(blobId)}/limits`}>Limits of this blob</Link> ·{' '}
        <Link to={`/orgs/${seg(orgId)}/blobs/${seg(blobId)}/access`}>Members and API keys</Link>
      </p>
      <h2>Revisions</h2>
      {revisions.state === 'loading' && <Loading what="revisions" />}
      {revisions.state === 'error' && <Refusal error={revisions.error} />}
      {revisions.state !== 'loading' && revisions.items.length === 0 && revisions.state !== 'error' && (
        <Empty>No revision.</Empty>
      )}
      {revisions.items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Number</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {revisions.items.map((revision) => (
              <tr key={revision.id}>
                <td>
                  <Link
                    to={revisionPath(orgId, blobId, revision.id, blob.state === 'ready' ? blob.data.blob.type : null)}
                  >
                    Revision {revision.number}
                  </Link>
                </td>
                <td>{revision.status}</td>
                <td>
                  <Time at={revision.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={revisions.hasMore} loading={revisions.state === 'more'} onMore={() => void revisions.more()} />
    </main>
  );
}
