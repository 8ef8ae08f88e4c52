/**
 * A definition: its graph (a node's config on click), and a form to run it in a session — a new
 * one or one named — which opens the execution's page.
 */
import { useMemo, useState, type FormEvent } from 'react';
import { useLoad } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { GraphView } from '../graph/lazy-graph.tsx';
import { NodeConfig } from '../graph/node-details.tsx';
import { graphOf } from '../graph/workflow-graph.ts';
import { Link, navigate, seg } from '../router.tsx';
import { Loading, Refusal } from '../ui/states.tsx';

export function DefinitionPage({ revisionId, definitionId }: { revisionId: string; definitionId: string }) {
  const service = useService();
  const definitions = useLoad(() => service.command('list_definitions', revisionId, {}), revisionId);
  const definition =
    definitions.state === 'ready'
      ? definitions.data.definitions.find((d) => d.id === definitionId || d.alias === definitionId)
      : undefined;
  const graph = useMemo(() => (definition ? graphOf(definition.graph) : null), [definition]);
  const [selected, setSelected] = useState<string | null>(null);
  const [input, setInput] = useState('{}');
  const [sessionId, setSessionId] = useState('');
  const [error, setError] = useState<unknown>(null);
  const base = `/revisions/${seg(revisionId)}`;

  const run = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    try {
      const inputData: unknown = JSON.parse(input);
      const session = sessionId.trim() || (await service.command('create_session', revisionId, {})).session.id;
      const { execution } = await service.command('create_execution', revisionId, {
        session_id: session,
        definition_id: definition!.id,
        input_data: inputData,
      });
      navigate(`${base}/executions/${seg(execution.id)}`);
    } catch (caught) {
      setError(caught instanceof SyntaxError ? new Error(`The input is not JSON: ${caught.message}`) : caught);
    }
  };

  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to={base}>Revision</Link>
      </nav>
      <h1>Definition {definition?.alias ?? definitionId}</h1>
      {definitions.state === 'loading' && <Loading what="the definition" />}
      {definitions.state === 'error' && <Refusal error={definitions.error} />}
      {definitions.state === 'ready' && !definition && (
        <Refusal error={new Error(`No definition ${definitionId} in this revision.`)} />
      )}
      {graph && (
        <div className="split">
          <GraphView
            graph={graph}
            selected={selected}
            onSelect={setSelected}
            label={`Graph of definition ${definition?.alias ?? definitionId}`}
          />
          {selected && graph.nodes[selected] ? (
            <NodeConfig name={selected} node={graph.nodes[selected]} />
          ) : (
            <p className="panel muted">Choose a node to see its config.</p>
          )}
        </div>
      )}
      {definition && (
        <p>
          <Link to={`${base}/definitions/new?from=${seg(definition.id)}`} className="button">
            Edit as a new definition
          </Link>{' '}
          <span className="muted">(a definition does not change once created; the edit is created beside it)</span>
        </p>
      )}
      {definition && (
        <section aria-labelledby="run-heading">
          <h2 id="run-heading">Run</h2>
          <form onSubmit={(event) => void run(event)}>
            <label htmlFor="run-input">Input (JSON)</label>
            <textarea id="run-input" rows={4} value={input} onChange={(e) => setInput(e.target.value)} />
            <label htmlFor="run-session">Session id (empty: a new session)</label>
            <input id="run-session" value={sessionId} onChange={(e) => setSessionId(e.target.value)} />
            <button type="submit">Run this definition</button>
          </form>
          {error !== null && <Refusal error={error} action="Starting the execution" />}
        </section>
      )}
    </main>
  );
}
