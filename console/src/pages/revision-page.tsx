/**
 * A workflow revision: its blob and type, its definitions, its sessions (paged), and forms to add
 * either. A revision of another type (opened by its id alone) goes on to its type's own page.
 */
import { useEffect, useState } from 'react';
import { revisionPath } from '../api/places.ts';
import { ok } from '../api/service.ts';
import { useLoad, usePages } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { Link, navigate, seg } from '../router.tsx';
import { Empty, Loading, More, Refusal, Time } from '../ui/states.tsx';

export function RevisionPage({ revisionId }: { revisionId: string }) {
  const service = useService();
  const revision = useLoad(
    () => ok(service.rest.GET('/v1/revisions/{id}', { params: { path: { id: revisionId } } })),
    revisionId,
  );
  // Get Revision names the blob, not its organization or type: Find by id answers both.
  const place = useLoad(
    () => ok(service.rest.GET('/v1/find/{id}', { params: { path: { id: revisionId } } })),
    revisionId,
  );
  const found = place.state === 'ready' ? place.data.found : null;
  const workflow = found === null || found.blob_type === 'svc.compute.workflow';
  useEffect(() => {
    if (found && !workflow) navigate(revisionPath(found.org_id, found.blob_id!, found.id, found.blob_type), true);
  }, [found, workflow]);
  const definitions = useLoad(() => service.command('list_definitions', revisionId, {}), revisionId);
  const sessions = usePages(async (cursor) => {
    const page = await service.command('list_sessions', revisionId, cursor ? { start_session_id: cursor } : {});
    return { items: page.sessions, next: page.last_session_id };
  }, revisionId);
  const [error, setError] = useState<unknown>(null);
  const base = `/revisions/${seg(revisionId)}`;

  const newSession = async () => {
    setError(null);
    try {
      const { session } = await service.command('create_session', revisionId, {});
      navigate(`${base}/sessions/${seg(session.id)}`);
    } catch (caught) {
      setError(caught);
    }
  };

  if (!workflow) return <Loading what={`the ${found!.blob_type} revision's page`} />;
  return (
    <main>
      {found && (
        <nav aria-label="Breadcrumb" className="crumbs">
          <Link to={`/orgs/${seg(found.org_id)}`}>Organization</Link>
          {' / '}
          <Link to={`/orgs/${seg(found.org_id)}/blobs/${seg(found.blob_id!)}`}>Blob</Link>
        </nav>
      )}
      <h1>Revision {revision.state === 'ready' ? revision.data.revision.number : ''}</h1>
      {revision.state === 'error' && <Refusal error={revision.error} />}
      {revision.state === 'ready' && (
        <dl className="facts">
          <dt>Id</dt>
          <dd>
            <code>{revision.data.revision.id}</code>
          </dd>
          <dt>Status</dt>
          <dd>{revision.data.revision.status}</dd>
          <dt>Blob type</dt>
          <dd data-testid="revision-blob-type">
            {found ? <code>{found.blob_type}</code> : place.state === 'error' ? 'unknown' : '…'}
          </dd>
        </dl>
      )}
      <h2>Definitions</h2>
      {definitions.state === 'loading' && <Loading what="definitions" />}
      {definitions.state === 'error' && <Refusal error={definitions.error} />}
      {definitions.state === 'ready' &&
        (definitions.data.definitions.length === 0 ? (
          <Empty>No definition yet.</Empty>
        ) : (
          <ul className="cards">
            {definitions.data.definitions.map((definition) => (
              <li key={definition.id}>
                <Link to={`${base}/definitions/${seg(definition.id)}`}>{definition.alias ?? definition.id}</Link>{' '}
                <span className="muted">
                  {definition.category}, {Object.keys((definition.graph.nodes as object | undefined) ?? {}).length}{' '}
                  nodes
                </span>
              </li>
            ))}
          </ul>
        ))}
      <p>
        <Link to={`${base}/definitions/new`} className="button">
          New definition
        </Link>
      </p>
      <h2>Sessions</h2>
      {sessions.state === 'loading' && <Loading what="sessions" />}
      {sessions.state === 'error' && <Refusal error={sessions.error} />}
      {sessions.state === 'ready' && sessions.items.length === 0 && <Empty>No session yet.</Empty>}
      {sessions.items.length > 0 && (
        <ul className="cards">
          {sessions.items.map((session) => (
            <li key={session.id}>
              <Link to={`${base}/sessions/${seg(session.id)}`}>{session.alias ?? session.id}</Link>{' '}
              <span className="muted">
                {session.status}, created <Time at={session.created_at} />
              </span>
            </li>
          ))}
        </ul>
      )}
      <More hasMore={sessions.hasMore} loading={sessions.state === 'more'} onMore={() => void sessions.more()} />
      <p>
        <button type="button" onClick={() => void newSession()}>
          New session
        </button>
      </p>
      {error !== null && <Refusal error={error} action="Creating the session" />}
    </main>
  );
}
