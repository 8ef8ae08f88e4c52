/**
 * Live events through `subscribe` on the shared WebSocket: an execution's (with replay: what was
 * written before the page opened, then each new event once, in order) or a session's (new ones
 * only). Events arriving together are applied in one render.
 */
import { useEffect, useState } from 'react';
import type { EventRecord, Subscription } from '../../../client/src/index.ts';
import { useService } from '../context.ts';

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
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      const arrived = batch;
      batch = [];
      if (!stopped) setEvents((current) => [...current, ...arrived]);
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
          if (!scheduled) {
            scheduled = true;
            queueMicrotask(flush);
          }
        }
      } catch (caught) {
        if (!stopped) setError(caught);
      }
    })();
    return () => {
      stopped = true;
      void subscription?.unsubscribe().catch(() => {});
    };
    // Deliberately narrow dependencies: `key` names the target
  }, [service, revisionId, key, replay]);
  return { events, error };
}
