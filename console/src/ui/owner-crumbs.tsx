/** The breadcrumb of a page about an organization or one of its blobs (its limits, its access). */
import { Link, seg } from '../router.tsx';

/** Links back to the organization and, for a blob's page, to the blob. */
export function OwnerCrumbs({ orgId, blobId }: { orgId: string; blobId?: string }) {
  return (
    <nav aria-label="Breadcrumb" className="crumbs">
      <Link to={`/orgs/${seg(orgId)}`}>Organization</Link>
      {blobId !== undefined && (
        <>
          {' / '}
          <Link to={`/orgs/${seg(orgId)}/blobs/${seg(blobId)}`}>Blob</Link>
        </>
      )}
    </nav>
  );
}
