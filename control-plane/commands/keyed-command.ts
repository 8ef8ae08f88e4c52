import type { Db, Tx } from '../../shared/db/db.ts';
import type { Principal } from '../auth/principal.ts';
import type { CommandResult } from './command.ts';
import type { AppContext } from '../context.ts';
import { checkedKey, IDEMPOTENCY_PARAM } from '../idempotency/idempotency-key.ts';
import { runIdempotent } from '../idempotency/idempotent.ts';

/**
 * `db` seen from inside the transaction `tx`: queries run on it, and a handler's own
 * `transaction(fn)` becomes a savepoint of it, so a failure inside rolls back just that part,
 * as its own transaction would have, and the rest commits with `tx`. Every query of the handler
 * goes through the connection `tx` already holds: a keyed create never needs a second pool
 * connection while concurrent duplicates hold theirs waiting for its key.
 */
function joinedDb(db: Db, tx: Tx): Db {
  let depth = 0;
  return {
    pool: db.pool,
    close: () => db.close(),
    query: (text, values) => tx.query(text, values),
    async transaction(fn) {
      depth += 1;
      const name = `keyed_${depth}`;
      await tx.query(`SAVEPOINT ${name}`);
      try {
        const result = await fn(tx);
        await tx.query(`RELEASE SAVEPOINT ${name}`);
        return result;
      } catch (error) {
        // If even this fails, the key's transaction is lost and rolls back whole: `error` is the cause.
        await tx.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => undefined);
        throw error;
      } finally {
        depth -= 1;
      }
    },
  };
}

/**
 * The context a creating command's handler gets when it runs under an idempotency key: the same
 * services, with the database joined to the key's transaction and executions created on it (not
 * in the group-commit batches, whose transactions are their own). What the handler writes then
 * commits or rolls back with the key and its stored answer.
 */
function contextOnTransaction(ctx: AppContext, tx: Tx): AppContext {
  return {
    ...ctx,
    db: joinedDb(ctx.db, tx),
    creates: {
      create: (fields) => ctx.creates.createIn(tx, fields),
      createIn: (other, fields) => ctx.creates.createIn(other, fields),
    },
  };
}

/** Where a command call's idempotency key may come from. */
export interface KeySources {
  /** REST: the `Idempotency-Key` header as received (absent: none). */
  header?: string | string[] | undefined;
  /** JSON-RPC: the key is the `idempotency_key` param. */
  inParams?: boolean;
}

/**
 * Takes the idempotency key out of a command call. Only a creating command has one: for any
 * other the header is ignored and the param is left in, where the strict schema refuses it as
 * an unknown param. A malformed key is 400 `invalid_request_body` (-32602).
 */
export function commandKey(
  command: { readonly creates?: boolean },
  params: Record<string, unknown>,
  sources: KeySources,
): { params: Record<string, unknown>; key: string | undefined } {
  if (command.creates !== true) return { params, key: undefined };
  if (sources.inParams === true) {
    if (!Object.hasOwn(params, IDEMPOTENCY_PARAM)) return { params, key: undefined };
    const { [IDEMPOTENCY_PARAM]: value, ...rest } = params;
    return { params: rest, key: checkedKey({ value, source: 'param' }) };
  }
  if (sources.header === undefined) return { params, key: undefined };
  return { params, key: checkedKey({ value: sources.header, source: 'header' }) };
}

/**
 * Runs a creating command under its key (runIdempotent): the handler gets a context joined to
 * the key's transaction (contextOnTransaction), and its result is the stored answer (HTTP 200).
 * A retry of the same call, over either transport, gets that result back; `onReplayed` hears of it.
 */
export async function runKeyedCommand(
  ctx: AppContext,
  principal: Principal,
  request: { key: string; name: string; revisionId: string; params: unknown },
  handler: (ctx: AppContext) => Promise<CommandResult>,
  onReplayed?: () => void,
): Promise<CommandResult> {
  const answer = await runIdempotent(
    ctx,
    principal,
    { key: request.key, operation: request.name, input: { revision_id: request.revisionId, params: request.params } },
    async (tx) => ({
      status: 200,
      body: await handler(contextOnTransaction(ctx, tx)),
    }),
  );
  if (answer.replayed) onReplayed?.();
  return answer.body;
}
