/**
 * The graph canvas (@xyflow/react): one box per node with its processor and, in an execution,
 * its state in words; routes as labelled arrows, failure routes dashed, the routes an execution
 * took drawn bold. Loaded on demand (React.lazy), so pages without a graph do not load it.
 * A node is chosen by click or, with the keyboard, by focusing it and pressing Enter.
 */
import { Background, Controls, Handle, Position, ReactFlow, type Edge, type Node, type NodeProps } from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { createContext, memo, useContext, useEffect, useMemo, useRef, useState } from 'react';
import { edgesOf, layoutOf, NODE_HEIGHT, NODE_WIDTH, type GraphSpec, type NodeState } from './workflow-graph.ts';

interface BoxData extends Record<string, unknown> {
  name: string;
  processor: string;
  start: boolean;
  issues: number;
}

/**
 * The nodes' states, read by each box rather than carried in the canvas's node objects: a state
 * changing then re-renders the boxes, and the canvas's node list, its store and every component
 * that follows them stay as they were.
 */
const StatesContext = createContext<Record<string, NodeState> | undefined>(undefined);

function NodeBox({ data, selected }: NodeProps<Node<BoxData>>) {
  const state = useContext(StatesContext)?.[data.name];
  return (
    <div
      className={`node-box ${state ?? ''} ${selected ? 'selected' : ''} ${data.issues > 0 ? 'has-issues' : ''}`}
      style={{ width: NODE_WIDTH, height: NODE_HEIGHT }}
      data-node={data.name}
      data-state={state ?? ''}
    >
      <Handle type="target" position={Position.Top} />
      <strong>{data.name}</strong>
      {data.start && <span className="tag">start</span>}
      <span className="processor">{data.processor}</span>
      {state && <span className="node-state">{state}</span>}
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

/** The previous array while its items are the same objects, so the canvas sees an unchanged list as unchanged. */
function useSameArray<T>(items: T[]): T[] {
  const last = useRef(items);
  const same = last.current.length === items.length && items.every((item, i) => item === last.current[i]);
  useEffect(() => {
    if (!same) last.current = items;
  });
  return same ? last.current : items;
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
  // has each re-render build unmeasured nodes, which the canvas hides until it measures them
  // again — under load, for seconds.
  const [measured, setMeasured] = useState<Record<string, { width: number; height: number }>>({});
  // A node or edge object changes only when what it shows does, and the lists only when one of
  // theirs does. A node's state is not in its object (StatesContext): an execution's event
  // re-renders the boxes, which read the states, and nothing else of the canvas.
  const keptNode = useKept<Node<BoxData>>();
  const keptEdge = useKept<Edge>();
  const nodes = useSameArray(
    Object.entries(graph.nodes).map(([name, node]) => {
      const size = measured[name];
      const position = positions.get(name) ?? { x: 0, y: 0 };
      const key = [
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
        // The state is shown inside the box (and in the page's node list), not named here.
        ariaLabel: `Node ${name}, ${node.processor}`,
        data: { name, processor: node.processor, start: graph.start === name, issues: issues?.[name] ?? 0 },
      }));
    }),
  );
  const flowEdges = useSameArray(
    edges.map((edge) => {
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
    }),
  );
  // Read through a ref, so the flow's handlers stay the same functions from render to render.
  const select = useRef(onSelect);
  select.current = onSelect;
  // The same element while its inputs are: React then skips the flow's whole tree when only the
  // states changed, and the context re-renders the boxes alone.
  const flow = useMemo(
    () => (
      <ReactFlow
        nodes={nodes}
        edges={flowEdges}
        nodeTypes={NODE_TYPES}
        fitView
        nodesDraggable={false}
        nodesConnectable={false}
        edgesFocusable={false}
        onNodeClick={(_event, node) => select.current?.(node.id)}
        onNodesChange={(changes) => {
          const sizes: Record<string, { width: number; height: number }> = {};
          for (const change of changes) {
            // Enter on a focused node selects it: the same as a click.
            if (change.type === 'select' && change.selected) select.current?.(change.id);
            if (change.type === 'dimensions' && change.dimensions) sizes[change.id] = change.dimensions;
          }
          if (Object.keys(sizes).length > 0) setMeasured((current) => ({ ...current, ...sizes }));
        }}
        minZoom={0.2}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    ),
    [nodes, flowEdges],
  );
  return (
    <div className="graph" role="group" aria-label={label}>
      <StatesContext.Provider value={states}>{flow}</StatesContext.Provider>
    </div>
  );
}

/** Re-rendered only when one of its props changes (the page around it renders on every event). */
export default memo(GraphCanvas);
