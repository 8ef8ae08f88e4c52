/**
 * The graph canvas (@xyflow/react): one box per node with its processor and, in an execution,
 * its state in words; routes as labelled arrows, failure routes dashed, the routes an execution
 * took drawn bold. Loaded on demand (React.lazy), so pages without a graph do not load it.
 * A node is chosen by click or, with the keyboard, by focusing it and pressing Enter.
 */
import { Background, Controls, Handle, Position, ReactFlow, type Edge, type Node, type NodeProps } from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { memo, useEffect, useMemo, useRef, useState } from 'react';
import { edgesOf, layoutOf, NODE_HEIGHT, NODE_WIDTH, type GraphSpec, type NodeState } from './workflow-graph.ts';

interface BoxData extends Record<string, unknown> {
  name: string;
  processor: string;
  state?: NodeState;
  start: boolean;
  issues: number;
}

function NodeBox({ data, selected }: NodeProps<Node<BoxData>>) {
  return (
    <div
      className={`node-box ${data.state ?? ''} ${selected ? 'selected' : ''} ${data.issues > 0 ? 'has-issues' : ''}`}
      style={{ width: NODE_WIDTH, height: NODE_HEIGHT }}
      data-node={data.name}
      data-state={data.state ?? ''}
    >
      <Handle type="target" position={Position.Top} />
      <strong>{data.name}</strong>
      {data.start && <span className="tag">start</span>}
      <span className="processor">{data.processor}</span>
      {data.state && <span className="node-state">{data.state}</span>}
      {data.issues > 0 && (
        <span className="node-issues">
          {data.issues} problem{data.issues > 1 ? 's' : ''}
        </span>
      )}
      <Handle type="source" position={Position.Bottom} />
    </div>
  );
}

const NODE_TYPES = { box: NodeBox };

export interface GraphCanvasProps {
  graph: GraphSpec;
  states?: Record<string, NodeState>;
  /** Routes taken (`from:route`), drawn bold. */
  taken?: ReadonlySet<string>;
  /** Problems per node (check_definition). */
  issues?: Record<string, number>;
  selected?: string | null;
  onSelect?: (node: string) => void;
  label: string;
}

/** An object kept while its key is the same, so the canvas sees unchanged nodes and edges as unchanged. */
function useKept<T>(): (id: string, key: string, make: () => T) => T {
  const kept = useRef(new Map<string, { key: string; value: T }>());
  const seen = new Map<string, { key: string; value: T }>();
  // Swapped after the render's calls: entries of nodes that went are dropped with the old map.
  useEffect(() => {
    kept.current = seen;
  });
  return (id, key, make) => {
    const old = kept.current.get(id);
    const entry = old && old.key === key ? old : { key, value: make() };
    seen.set(id, entry);
    return entry.value;
  };
}

function GraphCanvas({ graph, states, taken, issues, selected, onSelect, label }: GraphCanvasProps) {
  // Laid out when the graph's shape changes, never when a node's state does.
  const edges = useMemo(() => edgesOf(graph), [graph]);
  const positions = useMemo(() => layoutOf(graph, edges), [graph, edges]);
  // The sizes the canvas measured, given back with every node: a controlled flow that drops them
  // has each re-render (a node's state changing) build unmeasured nodes, which the canvas hides
  // until it measures them again — under load, for seconds.
  const [measured, setMeasured] = useState<Record<string, { width: number; height: number }>>({});
  // A node or edge object changes only when what it shows does: an execution's event re-renders
  // the canvas, and the canvas then updates the one or two nodes whose state changed, not all.
  const keptNode = useKept<Node<BoxData>>();
  const keptEdge = useKept<Edge>();
  const nodes = Object.entries(graph.nodes).map(([name, node]) => {
    const state = states?.[name];
    const size = measured[name];
    const position = positions.get(name) ?? { x: 0, y: 0 };
    const key = [
      state,
      selected === name,
      size?.width,
      size?.height,
      issues?.[name] ?? 0,
      position.x,
      position.y,
      node.processor,
      graph.start,
    ].join('|');
    return keptNode(name, key, () => ({
      id: name,
      type: 'box',
      position,
      ...(size ? { measured: size } : {}),
      selected: selected === name,
      ariaLabel: `Node ${name}, ${node.processor}${state ? `, ${state}` : ''}`,
      data: { name, processor: node.processor, state, start: graph.start === name, issues: issues?.[name] ?? 0 },
    }));
  });
  const flowEdges = edges.map((edge) => {
    const isTaken = taken?.has(edge.id) ?? false;
    // Taken routes are drawn bold, not animated: an endless dash animation repaints the canvas
    // every frame, time the page needs for the events it follows.
    return keptEdge(edge.id, `${edge.from}|${edge.to}|${edge.route}|${isTaken}`, () => ({
      id: edge.id,
      source: edge.from,
      target: edge.to,
      label: edge.route,
      className: `${edge.failure ? 'failure-route' : ''} ${isTaken ? 'taken' : ''}`,
    }));
  });
  return (
    <div className="graph" role="group" aria-label={label}>
      <ReactFlow
        nodes={nodes}
        edges={flowEdges}
        nodeTypes={NODE_TYPES}
        fitView
        nodesDraggable={false}
        nodesConnectable={false}
        edgesFocusable={false}
        onNodeClick={(_event, node) => onSelect?.(node.id)}
        onNodesChange={(changes) => {
          const sizes: Record<string, { width: number; height: number }> = {};
          for (const change of changes) {
            // Enter on a focused node selects it: the same as a click.
            if (change.type === 'select' && change.selected) onSelect?.(change.id);
            if (change.type === 'dimensions' && change.dimensions) sizes[change.id] = change.dimensions;
          }
          if (Object.keys(sizes).length > 0) setMeasured((current) => ({ ...current, ...sizes }));
        }}
        minZoom={0.2}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}

/** Re-rendered only when one of its props changes (the page around it renders on every event). */
export default memo(GraphCanvas);
