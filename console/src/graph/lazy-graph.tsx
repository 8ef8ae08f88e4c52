/** The graph canvas, loaded on first use (its library is the bulk of the console's JavaScript). */
import { lazy, memo, Suspense } from 'react';
import type { GraphCanvasProps } from './graph-canvas.tsx';
import { Loading } from '../ui/states.tsx';

const Canvas = lazy(() => import('./graph-canvas.tsx'));

/** The canvas once loaded; re-rendered only when its props change. */
export const GraphView = memo(function GraphView(props: GraphCanvasProps) {
  return (
    <Suspense fallback={<Loading what="the graph" />}>
      <Canvas {...props} />
    </Suspense>
  );
});
