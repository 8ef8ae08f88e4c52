/** The graph canvas, loaded on first use (its library is the bulk of the console's JavaScript). */
import { lazy, Suspense } from 'react';
import type { GraphCanvasProps } from './graph-canvas.tsx';
import { Loading } from '../ui/states.tsx';

const Canvas = lazy(() => import('./graph-canvas.tsx'));

export function GraphView(props: GraphCanvasProps) {
  return (
    <Suspense fallback={<Loading what="the graph" />}>
      <Canvas {...props} />
    </Suspense>
  );
}
