/**
 * Data fetching for pages: one read (`useLoad`) and the API's cursor listings (`usePages`), each
 * with its loading, error and ready states, so every page shows all three alike.
 */
import { useCallback, useEffect, useRef, useState } from 'react';

export type Loaded<T> =
  | { state: 'loading'; data?: undefined; error?: undefined }
  | { state: 'error'; data?: undefined; error: unknown }
  | { state: 'ready'; data: T; error?: undefined };

/** Runs `load` when `key` changes; `reload()` runs it again, keeping the shown data until it answers. */
export function useLoad<T>(load: () => Promise<T>, key: string): Loaded<T> & { reload: () => Promise<void> } {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  const latest = useRef(load);
  latest.current = load;
  const generation = useRef(0);
  const run = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const data = await latest.current();
      if (mine === generation.current) setLoaded({ state: 'ready', data });
    } catch (error) {
      if (mine === generation.current) setLoaded({ state: 'error', error });
    }
  }, []);
  useEffect(() => {
    setLoaded({ state: 'loading' });
    void run();
    return () => {
      generation.current++;
    };
  }, [key, run]);
  return { ...loaded, reload: run };
}

/** One page of a cursor listing: its items and the cursor of the next page (null: the end). */
export interface Page<T> {
  items: T[];
  next: string | null;
}

/**
 * A listing paged with the API's own cursor. A short page is not the end: only a null cursor is
 * (docs/sessions-and-events.md). `more()` appends the next page; `reload()` starts again.
 */
export function usePages<T>(loadPage: (cursor: string | null) => Promise<Page<T>>, key: string) {
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [state, setState] = useState<'loading' | 'ready' | 'error' | 'more'>('loading');
  const [error, setError] = useState<unknown>(null);
  const latest = useRef(loadPage);
  latest.current = loadPage;
  const generation = useRef(0);
  const fetchPage = useCallback(async (cursor: string | null, append: boolean) => {
    const mine = ++generation.current;
    setState(append ? 'more' : (current) => (current === 'ready' ? 'ready' : 'loading'));
    try {
      const page = await latest.current(cursor);
      if (mine !== generation.current) return;
      setItems((current) => (append ? [...current, ...page.items] : page.items));
      setNext(page.next);
      setState('ready');
    } catch (caught) {
      if (mine !== generation.current) return;
      setError(caught);
      setState('error');
    }
  }, []);
  useEffect(() => {
    setItems([]);
    setState('loading');
    void fetchPage(null, false);
  }, [key, fetchPage]);
  return {
    items,
    state,
    error,
    hasMore: next !== null,
    more: () => fetchPage(next, true),
    reload: () => fetchPage(null, false),
  };
}
