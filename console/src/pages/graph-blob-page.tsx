/**
 * A graph blob's revision: a query box (the graph query of docs/graph.md, as JSON) and its result,
 * the nodes and edges it reached, drawn as a graph (the walk's ends marked) and listed, and whether
 * rows were dropped.
 */
import { useState, type FormEvent } from 'react';
import { useService } from '../context.ts';
import { DataGraphView } from '../graph/lazy-graph.tsx';
import { Empty, Refusal } from '../ui/states.tsx';

type Element = {
  id: string;
  kind: 'node' | 'edge';
  label: string;
  source?: string;
  target?: string;
  properties: Record<string, unknown>;
};
interface QueryAnswer {
  nodes: Element[];
  edges: Element[];
  ends: string[];
  truncated: boolean;
}

const EXAMPLE = '{"start": {"label": "Person"}, "steps": [{"direction": "out", "min": 0, "max": 2}]}';

export default function GraphBlobPage({ revisionId }: { revisionId: string }) {
  const service = useService();
  const [text, setText] = useState(EXAMPLE);
  const [answer, setAnswer] = useState<QueryAnswer | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    let query: unknown;
    try {
      query = JSON.parse(text);
    } catch (caught) {
      setError(new Error(`The query is not JSON: ${(caught as Error).message}`));
      return;
    }
    setBusy(true);
    try {
      setAnswer((await service.command('query_graph', revisionId, { query } as never)) as unknown as QueryAnswer);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main>
      <h1>Graph query</h1>
      <form onSubmit={(event) => void run(event)}>
        <label htmlFor="graph-query">Query (JSON: start, steps)</label>
        <textarea id="graph-query" rows={5} value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit" disabled={busy}>
          {busy ? 'Running…' : 'Run query'}
        </button>
      </form>
      {error !== null && <Refusal error={error} action="The query" />}
      {answer && (
        <section aria-labelledby="graph-result-heading" className="graph-result">
          <h2 id="graph-result-heading">
            {answer.nodes.length} nodes, {answer.edges.length} edges
            {answer.truncated ? ' (truncated: graphdb.query_results reached)' : ''}
          </h2>
          {answer.nodes.length > 0 && (
            <DataGraphView
              nodes={answer.nodes}
              edges={answer.edges}
              marked={answer.ends}
              label="The query's result drawn: nodes and the edges between them"
            />
          )}
          {answer.nodes.length === 0 ? (
            <Empty>No node matched.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Node</th>
                  <th scope="col">Label</th>
                  <th scope="col">Properties</th>
                  <th scope="col">Where the walk ended</th>
                </tr>
              </thead>
              <tbody>
                {answer.nodes.map((node) => (
                  <tr key={node.id}>
                    <th scope="row">
                      <code>{node.id}</code>
                    </th>
                    <td>{node.label}</td>
                    <td>
                      <code>{JSON.stringify(node.properties)}</code>
                    </td>
                    <td>{answer.ends.includes(node.id) ? 'yes' : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {answer.edges.length > 0 && (
            <table>
              <thead>
                <tr>
                  <th scope="col">Edge</th>
                  <th scope="col">Label</th>
                  <th scope="col">From → to</th>
                </tr>
              </thead>
              <tbody>
                {answer.edges.map((edge) => (
                  <tr key={edge.id}>
                    <th scope="row">
                      <code>{edge.id}</code>
                    </th>
                    <td>{edge.label}</td>
                    <td>
                      <code>{edge.source}</code> → <code>{edge.target}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      )}
    </main>
  );
}
