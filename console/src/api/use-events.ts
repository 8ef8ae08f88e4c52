/**
 * Live events through `subscribe` on the shared WebSocket: an execution's (with replay: what was
 * written before the page opened, then each new event once, in order) or a session's (new ones
 * only). Events are applied once per animation frame: every event that arrived since the last
 * frame in one render, so a burst of pushes costs one render per frame, not one per event.
 */
import { useEffect, useState } from 'react';
import type { EventRecord, Subscription } from '../../../client/src/index.ts';
import { useService } from '../context.ts';

/** Longest wait for a frame before the events are applied anyway. */
const FALLBACK_MS = 250;

type Target = { execution_id: string } | { session_id: string };

/** Every event of the target so far, growing live; `error` when the subscription ended failing. */
export function useEvents(
  revisionId: string,
  target: Target,
  replay: boolean,
): { events: EventRecord[]; error: unknown } {
  const service = useService();
  const [events, setEvents] = useState<EventRecord[]>([]);
  const [error, setError] = useState<unknown>(null);
  const key = 'execution_id' in target ? `e:${target.execution_id}` : `s:${target.session_id}`;
  useEffect(() => {
    let subscription: Subscription | null = null;
    let stopped = false;
    let batch: EventRecord[] = [];
    let frame = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      cancelAnimationFrame(frame);
      clearTimeout(timer);
      frame = 0;
      timer = undefined;
      const arrived = batch;
      batch = [];
      if (!stopped && arrived.length > 0) setEvents((current) => current.concat(arrived));
    };
    // The next frame, or a fallback timer where frames do not come (a hidden tab renders none, and
    // the events must still be taken in, not pile up).
    const schedule = () => {
      if (frame !== 0 || timer !== undefined) return;
      frame = requestAnimationFrame(flush);
      timer = setTimeout(flush, FALLBACK_MS);
    };
    setEvents([]);
    setError(null);
    void (async () => {
      try {
        const rpc = await service.rpc();
        subscription = await rpc.subscribe(
          { revision_id: revisionId, ...target } as Parameters<typeof rpc.subscribe>[0],
          { replay },
        );
        if (stopped) return void subscription.unsubscribe();
        for await (const event of subscription) {
          batch.push(event);
          schedule();
        }
      } catch (caught) {
        if (!stopped) setError(caught);
      }
    })();
    return () => {
      stopped = true;
      cancelAnimationFrame(frame);
      clearTimeout(timer);
      void subscription?.unsubscribe().catch(() => {});
    };
    // Deliberately narrow dependencies: `key` names the target
  }, [service, revisionId, key, replay]);
  return { events, error };
}
