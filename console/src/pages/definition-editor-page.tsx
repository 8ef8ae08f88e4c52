/**
 * A new definition, written as YAML or JSON (JSON is YAML). As the text changes, check_definition
 * answers; its problems are listed by node and field and counted on the node they name in the
 * graph drawn beside. Saving is create_definition. Opened with `?from=<definition id>`, it starts
 * from that definition's graph as YAML: definitions do not change, so an edit is a new one.
 */
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { parse, stringify } from 'yaml';
import type { DefinitionIssue } from '../../../client/src/index.ts';
import { useService } from '../context.ts';
import { GraphView } from '../graph/lazy-graph.tsx';
import { graphOf } from '../graph/workflow-graph.ts';
import { Link, navigate, seg, useLocation } from '../router.tsx';
import { Refusal } from '../ui/states.tsx';

const EXAMPLE = `start: greet
nodes:
  greet:
    processor: logic.code
    config:
      code: "export default async (input) => ({ hello: input.name ?? 'world' })"
    routes: { success: done, failure: report }
  done:
    processor: logic.code
    config:
      code: "export default async (input) => ({ ...input, done: true })"
  report:
    processor: logic.code
    config:
      code: "export default async (input) => ({ reported: input })"
`;

type Check =
  | { state: 'idle' | 'checking' }
  | { state: 'checked'; errors: DefinitionIssue[]; warnings: DefinitionIssue[] }
  | { state: 'unparsable'; message: string }
  | { state: 'failed'; error: unknown };

export default function DefinitionEditorPage({ revisionId }: { revisionId: string }) {
  const service = useService();
  const [text, setText] = useState(EXAMPLE);
  const from = useLocation().query.get('from');
  const [fromError, setFromError] = useState<unknown>(null);
  // The definition edited: its graph, written as YAML, replaces the example once read.
  useEffect(() => {
    if (!from) return;
    let current = true;
    service
      .command('list_definitions', revisionId, {})
      .then(({ definitions }) => {
        const found = definitions.find((definition) => definition.id === from || definition.alias === from);
        if (!current) return;
        // Long strings (code) kept on one line each: folded, they are hard to edit.
        if (found) setText(stringify(found.graph, { lineWidth: 0 }));
        else setFromError(new Error(`No definition ${from} in this revision.`));
      })
      .catch((caught: unknown) => current && setFromError(caught));
    return () => {
      current = false;
    };
  }, [from, revisionId, service]);
  const [alias, setAlias] = useState('');
  const [check, setCheck] = useState<Check>({ state: 'idle' });
  const [error, setError] = useState<unknown>(null);
  const parsed = useMemo((): { graph: Record<string, unknown> } | { message: string } => {
    try {
      const value: unknown = parse(text);
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        return { message: 'The definition must be an object with start and nodes.' };
      return { graph: value as Record<string, unknown> };
    } catch (caught) {
      return { message: caught instanceof Error ? caught.message : String(caught) };
    }
  }, [text]);

  useEffect(() => {
    if ('message' in parsed) {
      setCheck({ state: 'unparsable', message: parsed.message });
      return;
    }
    setCheck({ state: 'checking' });
    let current = true;
    // A pause in typing, then one check: not one request per key.
    const timer = setTimeout(() => {
      service
        .command('check_definition', revisionId, { graph: parsed.graph })
        .then((answer) => {
          const { errors = [], warnings = [] } = answer as { errors?: DefinitionIssue[]; warnings?: DefinitionIssue[] };
          if (current) setCheck({ state: 'checked', errors, warnings });
        })
        .catch((caught: unknown) => current && setCheck({ state: 'failed', error: caught }));
    }, 300);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [parsed, revisionId, service]);

  const graph = 'graph' in parsed ? graphOf(parsed.graph) : null;
  const issuesByNode: Record<string, number> = {};
  if (check.state === 'checked')
    for (const issue of check.errors) if (issue.node) issuesByNode[issue.node] = (issuesByNode[issue.node] ?? 0) + 1;

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    if (!('graph' in parsed)) return;
    try {
      const { definition } = await service.command('create_definition', revisionId, {
        category: 'workflow',
        graph: parsed.graph,
        ...(alias.trim() ? { alias: alias.trim() } : {}),
      });
      navigate(`/revisions/${seg(revisionId)}/definitions/${seg(definition.id)}`);
    } catch (caught) {
      setError(caught);
    }
  };

  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to={`/revisions/${seg(revisionId)}`}>Revision</Link>
      </nav>
      <h1>New definition</h1>
      {from && <p className="muted">Starting from definition {from}.</p>}
      {fromError !== null && <Refusal error={fromError} action="Reading the definition to edit" />}
      <form onSubmit={(event) => void save(event)}>
        <div className="split">
          <div>
            <label htmlFor="definition-text">Definition (YAML or JSON)</label>
            <textarea
              id="definition-text"
              className="code-editor"
              rows={22}
              spellCheck={false}
              value={text}
              onChange={(e) => setText(e.target.value)}
            />
          </div>
          <div>
            {graph && Object.keys(graph.nodes).length > 0 && (
              <GraphView graph={graph} issues={issuesByNode} label="Graph of the definition being written" />
            )}
          </div>
        </div>
        <div aria-live="polite" className="check">
          {check.state === 'checking' && <p className="muted">Checking…</p>}
          {check.state === 'unparsable' && <p className="problem">Not YAML or JSON: {check.message}</p>}
          {check.state === 'failed' && <Refusal error={check.error} action="Checking" />}
          {check.state === 'checked' && check.errors.length === 0 && (
            <p className="fine">check_definition: no problem.</p>
          )}
          {check.state === 'checked' && check.errors.length > 0 && (
            <>
              <h2>Problems</h2>
              <ul className="issues">
                {check.errors.map((issue, i) => (
                  <li key={i}>
                    <code>{issue.code}</code> at <strong>{issue.node ?? 'graph'}</strong>
                    {issue.field ? <code>.{issue.field}</code> : null}: {issue.message}
                  </li>
                ))}
              </ul>
            </>
          )}
          {check.state === 'checked' && check.warnings.length > 0 && (
            <ul className="warnings">
              {check.warnings.map((issue, i) => (
                <li key={i}>
                  Warning <code>{issue.code}</code> at {issue.node ?? 'graph'}
                  {issue.field ? `.${issue.field}` : ''}: {issue.message}
                </li>
              ))}
            </ul>
          )}
        </div>
        <label htmlFor="definition-alias">Alias (optional)</label>
        <input id="definition-alias" value={alias} onChange={(e) => setAlias(e.target.value)} />
        <button type="submit" disabled={!('graph' in parsed)}>
          Create definition
        </button>
      </form>
      {error !== null && <Refusal error={error} action="Creating the definition" />}
    </main>
  );
}
