/**
 * A property graph drawn (a graph blob's query result, a session's graph): one box per node with
 * its id and label, edges as labelled arrows, laid out left to right by dagre. Edges whose ends
 * are not among the nodes shown (a query's edge to a node it did not return, a page not loaded
 * yet) are left out. Loaded on demand with the graph canvas's library.
 */
import { Graph, layout } from '@dagrejs/dagre';
import {
  Background,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  type Edge,
  type Node,
  type NodeProps,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { memo, useMemo } from 'react';

interface DataElement {
  id: string;
  label: string;
  source?: string | null;
  target?: string | null;
}

export interface DataGraphProps {
  nodes: readonly DataElement[];
  edges: readonly DataElement[];
  /** Nodes drawn marked (where a query's walk ended). */
  marked?: readonly string[];
  label: string;
}

const WIDTH = 170;
const HEIGHT = 52;

interface BoxData extends Record<string, unknown> {
  id: string;
  label: string;
  marked: boolean;
}

function DataBox({ data }: NodeProps<Node<BoxData>>) {
  return (
    <div
      className={`data-box ${data.marked ? 'marked' : ''}`}
      style={{ width: WIDTH, height: HEIGHT }}
      data-element={data.id}
    >
      <Handle type="target" position={Position.Left} />
      <strong>{data.id}</strong>
      <span className="processor">{data.label}</span>
      <Handle type="source" position={Position.Right} />
    </div>
  );
}

const NODE_TYPES = { data: DataBox };

function DataGraphCanvas({ nodes, edges, marked, label }: DataGraphProps) {
  const drawn = useMemo(() => {
    const ids = new Set(nodes.map((node) => node.id));
    const shown = edges.filter((edge) => edge.source && edge.target && ids.has(edge.source) && ids.has(edge.target));
    const g = new Graph({ multigraph: true });
    g.setGraph({ rankdir: 'LR', nodesep: 30, ranksep: 70 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const node of nodes) g.setNode(node.id, { width: WIDTH, height: HEIGHT });
    for (const edge of shown)
      g.setEdge(edge.source!, edge.target!, { label: edge.label, width: 60, height: 20 }, edge.id);
    layout(g);
    const ends = new Set(marked ?? []);
    const flowNodes: Node<BoxData>[] = nodes.map((node) => {
      const { x, y } = g.node(node.id) as { x: number; y: number };
      return {
        id: node.id,
        type: 'data',
        position: { x: x - WIDTH / 2, y: y - HEIGHT / 2 },
        ariaLabel: `Node ${node.id}, ${node.label}`,
        data: { id: node.id, label: node.label, marked: ends.has(node.id) },
      };
    });
    const flowEdges: Edge[] = shown.map((edge) => ({
      id: edge.id,
      source: edge.source!,
      target: edge.target!,
      label: edge.label,
      markerEnd: { type: MarkerType.ArrowClosed },
    }));
    return { flowNodes, flowEdges };
  }, [nodes, edges, marked]);
  return (
    <div className="graph data-graph" role="group" aria-label={label}>
      <ReactFlow
        nodes={drawn.flowNodes}
        edges={drawn.flowEdges}
        nodeTypes={NODE_TYPES}
        fitView
        fitViewOptions={{ maxZoom: 1 }}
        nodesDraggable={false}
        nodesConnectable={false}
        edgesFocusable={false}
        minZoom={0.1}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}

export default memo(DataGraphCanvas);
