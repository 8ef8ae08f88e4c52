/**
 * What a session holds besides its executions: its objects and files (a file downloads), its
 * thread items, and its graph's nodes and edges (drawn, and listed), each listing paged with the
 * API's own cursor.
 */
import { useMemo, useState } from 'react';
import type { components } from '../../../client/src/rest-types.ts';
import { usePages } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { DataGraphView } from '../graph/lazy-graph.tsx';
import { Empty, Json, Loading, More, Refusal, Time } from '../ui/states.tsx';

type SessionObject = components['schemas']['SessionObject'];

export function SessionContents({ revisionId, sessionId }: { revisionId: string; sessionId: string }) {
  return (
    <>
      <Objects revisionId={revisionId} sessionId={sessionId} />
      <ThreadItems revisionId={revisionId} sessionId={sessionId} />
      <SessionGraph revisionId={revisionId} sessionId={sessionId} />
    </>
  );
}

function Objects({ revisionId, sessionId }: { revisionId: string; sessionId: string }) {
  const service = useService();
  const objects = usePages(async (cursor) => {
    const page = await service.command('list_session_objects', revisionId, {
      session_id: sessionId,
      ...(cursor ? { cursor } : {}),
    });
    return { items: page.objects, next: page.cursor };
  }, revisionId + sessionId);
  const [error, setError] = useState<unknown>(null);
  const download = async (object: SessionObject) => {
    setError(null);
    try {
      // REST answers the bytes themselves (any size); the browser saves them under the alias.
      const { data, error: refused } = await service.rest.POST('/v1/revisions/{revision_id}/download_session_file', {
        params: { path: { revision_id: revisionId } },
        body: { session_id: sessionId, alias: object.alias },
        parseAs: 'blob',
      });
      if (refused !== undefined || !(data instanceof Blob)) throw refused ?? new Error('No file in the answer.');
      const url = URL.createObjectURL(data);
      const link = document.createElement('a');
      link.href = url;
      link.download = object.alias;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <section aria-labelledby="objects-heading">
      <h2 id="objects-heading">Objects and files</h2>
      {error !== null && <Refusal error={error} action="The download" />}
      {objects.state === 'loading' && <Loading what="objects" />}
      {objects.state === 'error' && <Refusal error={objects.error} />}
      {objects.state === 'ready' && objects.items.length === 0 && <Empty>No object or file yet.</Empty>}
      {objects.items.length > 0 && (
        <table className="objects">
          <thead>
            <tr>
              <th scope="col">Alias</th>
              <th scope="col">Kind</th>
              <th scope="col">Size</th>
              <th scope="col">Updated</th>
              <th scope="col">Value or file</th>
            </tr>
          </thead>
          <tbody>
            {objects.items.map((object) => (
              <tr key={object.id} data-alias={object.alias}>
                <th scope="row">
                  <code>{object.alias}</code>
                </th>
                <td>{object.kind}</td>
                <td>{object.size.toLocaleString('en')} bytes</td>
                <td>
                  <Time at={object.updated_at} />
                </td>
                <td>
                  {object.kind === 'file' ? (
                    <button type="button" onClick={() => void download(object)}>
                      Download {object.alias}
                    </button>
                  ) : (
                    <Json value={object.value} label={`Value of ${object.alias}`} />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={objects.hasMore} loading={objects.state === 'more'} onMore={() => void objects.more()} />
    </section>
  );
}

function ThreadItems({ revisionId, sessionId }: { revisionId: string; sessionId: string }) {
  const service = useService();
  const items = usePages(async (cursor) => {
    const page = await service.command('list_session_thread_items', revisionId, {
      session_id: sessionId,
      ...(cursor ? { cursor } : {}),
    });
    return { items: page.thread_items, next: page.cursor };
  }, revisionId + sessionId);
  return (
    <section aria-labelledby="thread-heading">
      <h2 id="thread-heading">Thread items</h2>
      {items.state === 'loading' && <Loading what="thread items" />}
      {items.state === 'error' && <Refusal error={items.error} />}
      {items.state === 'ready' && items.items.length === 0 && <Empty>No thread item yet.</Empty>}
      {items.items.length > 0 && (
        <ol className="cards thread">
          {items.items.map((item) => (
            <li key={item.id}>
              <p>
                <strong>{item.thread}</strong> <Time at={item.created_at} />{' '}
                <span className="muted">
                  {item.author_id ? `by ${item.author_id}` : `by execution ${item.execution_id ?? ''}`}
                </span>
              </p>
              {item.text !== null && <p className="thread-text">{item.text}</p>}
              {item.data !== null && <Json value={item.data} label={`Data of thread item ${item.id}`} />}
              {item.files.length > 0 && <p>Files: {item.files.join(', ')}</p>}
            </li>
          ))}
        </ol>
      )}
      <More hasMore={items.hasMore} loading={items.state === 'more'} onMore={() => void items.more()} />
    </section>
  );
}

/** The loaded elements drawn; memoized on the list, so it is laid out again only when a page arrives. */
function SessionGraphDrawn({
  elements,
}: {
  elements: readonly { id: string; kind: string; label: string; source?: string | null; target?: string | null }[];
}) {
  const nodes = useMemo(() => elements.filter((element) => element.kind === 'node'), [elements]);
  const edges = useMemo(() => elements.filter((element) => element.kind === 'edge'), [elements]);
  return <DataGraphView nodes={nodes} edges={edges} label="The session graph drawn (the elements loaded so far)" />;
}

function SessionGraph({ revisionId, sessionId }: { revisionId: string; sessionId: string }) {
  const service = useService();
  const elements = usePages(async (cursor) => {
    const page = await service.command('list_session_graph_elements', revisionId, {
      session_id: sessionId,
      ...(cursor ? { cursor } : {}),
    });
    return { items: page.elements, next: page.cursor };
  }, revisionId + sessionId);
  return (
    <section aria-labelledby="session-graph-heading">
      <h2 id="session-graph-heading">Session graph</h2>
      {elements.state === 'loading' && <Loading what="the session graph" />}
      {elements.state === 'error' && <Refusal error={elements.error} />}
      {elements.state === 'ready' && elements.items.length === 0 && <Empty>The session graph is empty.</Empty>}
      {elements.items.length > 0 && <SessionGraphDrawn elements={elements.items} />}
      {elements.items.length > 0 && (
        <table className="session-graph">
          <thead>
            <tr>
              <th scope="col">Element</th>
              <th scope="col">Label</th>
              <th scope="col">Edge</th>
              <th scope="col">Properties</th>
            </tr>
          </thead>
          <tbody>
            {elements.items.map((element) => (
              <tr key={element.id}>
                <th scope="row">
                  {element.kind} <code>{element.id}</code>
                </th>
                <td>{element.label}</td>
                <td>
                  {element.kind === 'edge' ? (
                    <>
                      <code>{element.source}</code> → <code>{element.target}</code>
                    </>
                  ) : (
                    '—'
                  )}
                </td>
                <td>
                  <code>{JSON.stringify(element.properties)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={elements.hasMore} loading={elements.state === 'more'} onMore={() => void elements.more()} />
    </section>
  );
}
