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

/** Every page of a record-cursor listing (`start_session_id` / `last_session_id`). */
export async function allPages(
  ctx: CliContext,
  revision: string,
  method: string,
  key: string,
  params: Params = {},
): Promise<Rows> {
  const rows: Rows = [];
  let start: string | null | undefined;
  // A listing of 10 a page: bounded by what the revision holds (its limits), not by the caller.
  do {
    const page = await revisionCommand<Record<string, unknown>>(ctx, revision, method, {
      ...params,
      ...(start ? { start_session_id: start } : {}),
    });
    rows.push(...((page[key] as Rows | undefined) ?? []));
    start = page.last_session_id as string | null | undefined;
  } while (start);
  return rows;
}

/** Every page of an opaque-cursor listing. */
export async function allCursorPages(
  ctx: CliContext,
  revision: string,
  method: string,
  key: string,
  params: Params = {},
): Promise<Rows> {
  const rows: Rows = [];
  let cursor: string | null | undefined;
  do {
    const page = await revisionCommand<Record<string, unknown>>(ctx, revision, method, {
      ...params,
      limit: 200,
      ...(cursor ? { cursor } : {}),
    });
    rows.push(...((page[key] as Rows | undefined) ?? []));
    cursor = page.cursor as string | null | undefined;
  } while (cursor);
  return rows;
}
