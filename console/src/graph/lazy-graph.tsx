/** The graph canvas, loaded on first use (its library is the bulk of the console's JavaScript). */
import { lazy, memo, Suspense } from 'react';
import type { DataGraphProps } from './data-graph-canvas.tsx';
import type { GraphCanvasProps } from './graph-canvas.tsx';
import { Loading } from '../ui/states.tsx';

const Canvas = lazy(() => import('./graph-canvas.tsx'));
const DataCanvas = lazy(() => import('./data-graph-canvas.tsx'));

/** The canvas once loaded; re-rendered only when its props change. */
export const GraphView = memo(function GraphView(props: GraphCanvasProps) {
  return (
    <Suspense fallback={<Loading what="the graph" />}>
      <Canvas {...props} />
    </Suspense>
  );
});

/** A property graph drawn (a graph query's result, a session's graph), loaded on first use. */
export const DataGraphView = memo(function DataGraphView(props: DataGraphProps) {
  return (
    <Suspense fallback={<Loading what="the graph" />}>
      <DataCanvas {...props} />
    </Suspense>
  );
});
