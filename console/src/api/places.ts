/**
 * Where a resource opens in the console, from what Find by id (`GET /v1/find/:id`) answers about
 * it: every kind of id has a page, and a revision opens its blob type's own page.
 */
import type { paths } from '../../../client/src/index.ts';
import { seg } from '../router.tsx';

/** What `GET /v1/find/{id}` answers. */
type Found = paths['/v1/find/{id}']['get']['responses'][200]['content']['application/json']['found'];

/** The console path of a revision of a blob of `type`: a workflow's definitions and sessions, else its type's page. */
export function revisionPath(orgId: string, blobId: string, revisionId: string, type: string | null): string {
  if (type === 'svc.model.onnx') return `/orgs/${seg(orgId)}/blobs/${seg(blobId)}/revisions/${seg(revisionId)}/model`;
  return `/revisions/${seg(revisionId)}${PAGE_OF_TYPE[type ?? ''] ?? ''}`;
}

const PAGE_OF_TYPE: Record<string, string> = {
  'svc.compute.scheduler': '/schedules',
  'svc.graph.graphdb': '/graph',
  'svc.dataset.nlp': '/records',
};

/** The console path of what was found. */
export function pathOf(found: Found): string {
  const rev = `/revisions/${seg(found.revision_id ?? '')}`;
  switch (found.kind) {
    case 'organization':
      return `/orgs/${seg(found.org_id)}`;
    case 'blob':
      return `/orgs/${seg(found.org_id)}/blobs/${seg(found.blob_id!)}`;
    case 'revision':
      return revisionPath(found.org_id, found.blob_id!, found.id, found.blob_type);
    case 'session':
      return `${rev}/sessions/${seg(found.id)}`;
    case 'definition':
      return `${rev}/definitions/${seg(found.id)}`;
    case 'execution':
      return `${rev}/executions/${seg(found.id)}`;
    case 'schedule':
      return `${rev}/schedules`;
  }
}
