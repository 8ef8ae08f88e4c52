/**
 * `wsctl run` creates an execution and, with `--follow`, shows it live over the WebSocket: a line
 * per node as it ends (route or error, and how long it ran), a progress line while it runs, then
 * the final status and the output. The exit code is 0 only when the execution succeeded.
 * `wsctl events tail` prints a session's or an execution's events as they are written.
 */
import type { Command } from 'commander';
import { ApiError, type EventRecord, type ExecutionRecord, type RpcClient } from '../client/src/index.ts';
import { CliError, type CliContext } from './context.ts';
import { printRecord, readJsonValue } from './input.ts';
import { printable } from './terminal-text.ts';

/** `12 ms`, `3.40 s`. */
function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

function describeError(error: unknown): string {
  if (typeof error === 'string') return printable(error);
  const e = error as { code?: string; error?: string; message?: string; limit?: { id: string; value: unknown } } | null;
  // A workflow's error: one line whatever its message holds (terminal-text.ts).
  let line = printable(`${e?.code ?? e?.error ?? 'error'}${e?.message ? `: ${e.message}` : ''}`);
  if (e?.limit) line += ` (limit ${e.limit.id} = ${JSON.stringify(e.limit.value)})`;
  return line;
}

/**
 * Prints an execution's events as they arrive until `execution.finished`; returns the record
 * read after it. Replays the events written before the subscription, so nothing is missed
 * however quickly the execution runs.
 */
export async function follow(
  ctx: CliContext,
  rpc: RpcClient,
  revisionId: string,
  execution: ExecutionRecord,
): Promise<ExecutionRecord> {
  const out = ctx.output;
  const started = new Map<string, { at: number; processor: string }>();
  let nodes = 0;
  let current = '';
  const since = Date.parse(execution.created_at);
  // On a terminal the progress line is redrawn in place; elsewhere (a log, a pipe) the node lines
  // and the final total say it all, each once.
  const progress = (status: string) => {
    if (!out.interactive) return;
    out.progress(
      `[${nodes} node${nodes === 1 ? '' : 's'} · ${duration(Date.now() - since)}] ${status}${current ? ` ${current}` : ''}`,
    );
  };
  const timer = out.interactive ? setInterval(() => progress('running'), 250) : undefined;
  try {
    const subscription = await rpc.subscribe({ revision_id: revisionId, execution_id: execution.id }, { replay: true });
    for await (const event of subscription) {
      const node = event.node ?? '';
      const attributes = event.attributes;
      switch (event.kind) {
        case 'execution.started':
          progress('started');
          break;
        case 'node.started':
          started.set(node, { at: Date.parse(event.at), processor: String(attributes.processor ?? '') });
          current = node;
          progress('running');
          break;
        case 'node.finished':
        case 'node.failed': {
          nodes++;
          const begun = started.get(node);
          const ms =
            typeof attributes.duration_ms === 'number'
              ? attributes.duration_ms
              : begun
                ? Date.parse(event.at) - begun.at
                : 0;
          const outcome =
            event.kind === 'node.finished'
              ? `→ ${attributes.route ?? 'end'}`
              : `failed ${describeError(attributes.error)}`;
          out.out(
            `${event.kind === 'node.finished' ? '✓' : '✗'} ${node} (${begun?.processor ?? '?'}) ${outcome}  ${duration(ms)}`,
          );
          for (const log of (attributes.logs as Array<{ level: string; message: string }> | undefined) ?? [])
            out.out(`    ${printable(String(log.level))}: ${printable(String(log.message))}`);
          current = '';
          progress('running');
          break;
        }
        case 'execution.sleeping':
          out.out(`… ${node} sleeps ${attributes.seconds} s (until ${attributes.wake_at})`);
          progress('sleeping');
          break;
        case 'execution.resumed':
          progress(`resumed (${attributes.reason})`);
          break;
        case 'flow.error':
          out.out(`✗ ${node} flow.error ${describeError(attributes)}`);
          break;
        case 'execution.finished':
          await subscription.unsubscribe();
          break;
      }
    }
  } finally {
    clearInterval(timer);
    out.endProgress();
  }
  return (await rpc.call('get_execution', { revision_id: revisionId, execution_id: execution.id })).execution;
}

/** The last lines of a followed run, and its exit code. */
export function report(ctx: CliContext, execution: ExecutionRecord): number {
  const took = execution.ended_at ? duration(Date.parse(execution.ended_at) - Date.parse(execution.created_at)) : '?';
  ctx.output.out(
    `${execution.status} in ${took} (${execution.node_runs} node run${execution.node_runs === 1 ? '' : 's'})`,
  );
  if (execution.status === 'succeeded') {
    ctx.output.out(JSON.stringify(execution.output, null, 2));
    return 0;
  }
  if (execution.error) ctx.output.err(`error: ${describeError(execution.error)}`);
  else ctx.output.err(`error: ${execution.status}: the execution did not succeed`);
  return 1;
}

/**
 * The session runs of a definition use when none is named: `run.<definition alias>` (or
 * `run.<definition id>` when that would pass 64 characters), created on the first run and reused,
 * so runs do not spend a slot of `workflow.sessions_per_revision` each.
 */
async function runSession(
  ctx: CliContext,
  rpc: RpcClient,
  revision: string,
  definition: { id: string; alias: string | null },
): Promise<string> {
  const alias = definition.alias && definition.alias.length <= 60 ? `run.${definition.alias}` : `run.${definition.id}`;
  const existing = async () => (await rpc.call('get_session', { revision_id: revision, session_id: alias })).session.id;
  try {
    return await existing();
  } catch (error) {
    if (!(error instanceof ApiError) || error.error !== 'not_found') throw error;
  }
  try {
    const { session } = await rpc.call('create_session', { revision_id: revision, alias });
    ctx.output.err(`session ${alias} created`);
    return session.id;
  } catch (error) {
    // Another run made it in between.
    if (error instanceof ApiError && error.error === 'alias_taken') return existing();
    throw error;
  }
}

/** Registers `run` and `events tail`; returns the `events` group. */
export function registerRun(program: Command, context: () => CliContext, setExitCode: (code: number) => void): Command {
  program
    .command('run')
    .description('creates an execution; --follow shows it node by node until it ends')
    .requiredOption('--revision <revision>', 'the workflow revision')
    .requiredOption('--definition <definition>', 'the definition (id or alias)')
    .option('--session <session>', "the session (id or alias); default: the definition's own, run.<alias>, made once")
    .option('--input <json>', 'input_data as JSON, or @file.json|yaml')
    .option('-f, --follow', 'follow the execution live; exit non-zero unless it succeeds')
    .action(
      async (options: { revision: string; definition: string; session?: string; input?: string; follow?: boolean }) => {
        const ctx = context();
        const input = options.input === undefined ? undefined : await readJsonValue(ctx, options.input, '--input');
        const rpc = await ctx.rpc();
        try {
          // The definition first: a run of one that does not exist creates nothing.
          const { definitions } = await rpc.call('list_definitions', { revision_id: options.revision });
          const definition = definitions.find((d) => d.id === options.definition || d.alias === options.definition);
          if (!definition)
            throw new CliError('not_found', `No definition ${options.definition} in revision ${options.revision}.`);
          const session = options.session ?? (await runSession(ctx, rpc, options.revision, definition));
          const params: { revision_id: string; session_id: string; definition_id: string; input_data?: unknown } = {
            revision_id: options.revision,
            session_id: session,
            definition_id: definition.id,
          };
          if (input !== undefined) params.input_data = input;
          const { execution } = await rpc.call('create_execution', params);
          if (!options.follow) {
            printRecord(ctx, execution);
            return;
          }
          ctx.output.out(`execution ${execution.id} ${execution.status}`);
          setExitCode(report(ctx, await follow(ctx, rpc, options.revision, execution)));
        } finally {
          await rpc.close();
        }
      },
    );

  const events = program.command('events').description('event logs');
  events
    .command('tail')
    .description("prints a session's or an execution's events as they are written (an execution's end stops it)")
    .requiredOption('--revision <revision>')
    .option('--session <session>')
    .option('--execution <execution>')
    .option('--from-start', 'print the events written before, first')
    .option('--count <n>', 'stop after n events', (v) => Number.parseInt(v, 10))
    .action(
      async (options: {
        revision: string;
        session?: string;
        execution?: string;
        fromStart?: boolean;
        count?: number;
      }) => {
        const ctx = context();
        if ((options.session === undefined) === (options.execution === undefined)) {
          throw new CliError('invalid_arguments', 'Give exactly one of --session and --execution.', 2);
        }
        const rpc = await ctx.rpc();
        try {
          const params =
            options.session !== undefined
              ? { revision_id: options.revision, session_id: options.session }
              : { revision_id: options.revision, execution_id: options.execution! };
          const subscription = await rpc.subscribe(params, { replay: options.fromStart === true });
          if (options.execution !== undefined && !options.fromStart) {
            // Subscribed first, then read: an execution that ends after this read is still seen.
            const { execution } = await rpc.call('get_execution', {
              revision_id: options.revision,
              execution_id: options.execution,
            });
            if (execution.ended_at !== null) {
              ctx.output.err(
                `execution ${execution.id} already ended (${execution.status}); --from-start prints its events`,
              );
              return;
            }
          }
          if (options.session !== undefined)
            ctx.output.err(`waiting for events of session ${options.session} (Ctrl-C stops)`);
          let seen = 0;
          const stopListening = ctx.io.onInterrupt?.(() => void subscription.unsubscribe());
          try {
            for await (const event of subscription) {
              ctx.output.out(eventLine(event));
              seen++;
              if (seen === options.count || (options.execution !== undefined && event.kind === 'execution.finished'))
                break;
            }
          } finally {
            stopListening?.();
          }
        } finally {
          await rpc.close();
        }
      },
    );
  return events;
}

/** One event on one line: id, time, kind, node, attributes. */
function eventLine(event: EventRecord): string {
  return [event.id, event.at, event.kind, event.node ?? '-', JSON.stringify(event.attributes)].join('  ');
}
