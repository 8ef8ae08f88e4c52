/** A workflow revision: its definitions, its sessions (paged), and forms to add either. */
import { useState } from 'react';
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

  return (
    <main>
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
