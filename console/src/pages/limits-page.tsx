/**
 * The limits of a user, an organization or a blob, in the catalog's order: the value in force,
 * where it came from (default, or the user, organization or blob override), and what is held.
 */
import type { components } from '../../../client/src/rest-types.ts';
import { ok } from '../api/service.ts';
import { useLoad } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { OwnerCrumbs } from '../ui/owner-crumbs.tsx';
import { InForceCells } from '../ui/limit-cells.tsx';
import { Loading, Refusal } from '../ui/states.tsx';

type LimitGroup = components['schemas']['LimitGroup'];
export type LimitsOf =
  { kind: 'user' } | { kind: 'org'; orgId: string } | { kind: 'blob'; orgId: string; blobId: string };

export function LimitsPage({ of }: { of: LimitsOf }) {
  const service = useService();
  const key = JSON.stringify(of);
  const limits = useLoad(async (): Promise<{ groups: LimitGroup[] }> => {
    if (of.kind === 'user')
      return ok(service.rest.GET('/v1/users/{user_id}/limits', { params: { path: { user_id: 'me' } } }));
    if (of.kind === 'org') return ok(service.rest.GET('/v1/orgs/{id}/limits', { params: { path: { id: of.orgId } } }));
    return ok(
      service.rest.GET('/v1/blobs/{org_id}/{blob_id}/limits', {
        params: { path: { org_id: of.orgId, blob_id: of.blobId } },
      }),
    );
  }, key);
  const title =
    of.kind === 'user' ? 'Your limits' : of.kind === 'org' ? 'Limits of the organization' : 'Limits of the blob';
  return (
    <main>
      {of.kind !== 'user' && <OwnerCrumbs orgId={of.orgId} blobId={of.kind === 'blob' ? of.blobId : undefined} />}
      <h1>{title}</h1>
      {limits.state === 'loading' && <Loading what="limits" />}
      {limits.state === 'error' && <Refusal error={limits.error} />}
      {limits.state === 'ready' &&
        limits.data.groups.map((group) => (
          <section key={group.id} aria-labelledby={`group-${group.id}`}>
            <h2 id={`group-${group.id}`}>{group.label}</h2>
            <table className="limits">
              <thead>
                <tr>
                  <th scope="col">Limit</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Value in force</th>
                  <th scope="col">Source</th>
                  <th scope="col">Default</th>
                  <th scope="col">Held</th>
                  <th scope="col">Unit</th>
                </tr>
              </thead>
              <tbody>
                {group.limits.map((limit) => (
                  <tr key={limit.id} data-limit={limit.id}>
                    <th scope="row">
                      <code>{limit.id}</code>
                    </th>
                    <td>{limit.kind}</td>
                    <InForceCells limit={limit} />
                    <td>
                      {limit.unit} per {limit.per}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        ))}
    </main>
  );
}
