/** A node's processor, config and routes: what a click on a node of the graph opens. */
import type { NodeSpec } from './workflow-graph.ts';
import { Json } from '../ui/states.tsx';

export function NodeConfig({ name, node }: { name: string; node: NodeSpec }) {
  return (
    <section className="panel" aria-labelledby="node-config-heading">
      <h3 id="node-config-heading">Node {name}</h3>
      <dl className="facts">
        <dt>Processor</dt>
        <dd>
          <code>{node.processor}</code>
        </dd>
        <dt>Routes</dt>
        <dd>
          {Object.entries(node.routes ?? {}).length === 0
            ? 'none (the execution ends here)'
            : Object.entries(node.routes ?? {}).map(([route, to]) => (
                <span key={route} className={route === 'failure' ? 'route failure' : 'route'}>
                  {route} → {to ?? 'end'}{' '}
                </span>
              ))}
        </dd>
      </dl>
      <h4>Config</h4>
      <Json value={node.config ?? {}} label={`Config of node ${name}`} />
    </section>
  );
}
