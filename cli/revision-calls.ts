/**
 * Revision commands over the WebSocket, one call per socket, and the listings that read every
 * page: record cursors (`last_session_id` → `start_session_id`) and opaque ones (`cursor`).
 */
import type { CliContext } from './context.ts';

export type Params = Record<string, unknown>;
export type Rows = Array<Record<string, unknown>>;

/** One command on a revision, over the WebSocket. */
export async function revisionCommand<T>(ctx: CliContext, revision: string, method: string, params: Params = {}) {
  const rpc = await ctx.rpc();
  try {
    return (await rpc.request(method, { revision_id: revision, ...params })) as T;
  } finally {
    await rpc.close();
  }
}

/**
 * Every page of a listing: `next` gives the params of the page after `page`, or null after the
 * last. A listing is bounded by what the revision holds (its limits), not by the caller.
 */
async function everyPage(
  ctx: CliContext,
  revision: string,
  method: string,
  key: string,
  first: Params,
  next: (page: Record<string, unknown>) => Params | null,
): Promise<Rows> {
  const rows: Rows = [];
  for (let params: Params | null = first; params !== null;) {
    const page = await revisionCommand<Record<string, unknown>>(ctx, revision, method, params);
    rows.push(...((page[key] as Rows | undefined) ?? []));
    params = next(page);
  }
  return rows;
}

/** Every page of a record-cursor listing (`start_session_id` / `last_session_id`), 10 a page. */
export function allPages(ctx: CliContext, revision: string, method: string, key: string, params: Params = {}) {
  return everyPage(ctx, revision, method, key, params, (page) =>
    page.last_session_id ? { ...params, start_session_id: page.last_session_id as string } : null,
  );
}

/** Every page of an opaque-cursor listing, 200 a page. */
export function allCursorPages(ctx: CliContext, revision: string, method: string, key: string, params: Params = {}) {
  const first = { ...params, limit: 200 };
  return everyPage(ctx, revision, method, key, first, (page) =>
    page.cursor ? { ...first, cursor: page.cursor as string } : null,
  );
}
