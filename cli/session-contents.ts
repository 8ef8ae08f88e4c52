/**
 * `wsctl sessions objects|files|thread|graph …` and `wsctl events list`: what a workflow session
 * holds (docs/session-contents.md, docs/graph.md) and its event logs
 * (docs/sessions-and-events.md). Commands go over the WebSocket; the two file transfers use the
 * binary REST routes, streamed, with a progress line like the model transfers.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { credentialHeaders } from '../client/src/index.ts';
import { CliError, type CliContext } from './context.ts';
import { printRecord, printRows, readJsonValue } from './input.ts';
import { allCursorPages, revisionCommand, type Params } from './revision-calls.ts';
import { failure, transferProgress } from './transfers.ts';

const revisionOption = (command: Command) => command.requiredOption('--revision <revision>', 'the workflow revision');

function registerObjects(sessions: Command, context: () => CliContext): void {
  const objects = sessions.command('objects').description("a session's objects and files (one alias namespace)");
  revisionOption(objects.command('list <session>'))
    .description('every object and file of the session (every page)')
    .action(async (session: string, options: { revision: string }) => {
      const ctx = context();
      const rows = await allCursorPages(ctx, options.revision, 'list_session_objects', 'objects', {
        session_id: session,
      });
      printRows(ctx, rows, ['id', 'alias', 'kind', 'size', 'content_type', 'updated_at']);
    });
  revisionOption(objects.command('put <session> <alias> <value>'))
    .description('writes an object: value is JSON (null included), or @file')
    .action(async (session: string, alias: string, value: string, options: { revision: string }) => {
      const ctx = context();
      const params = { session_id: session, alias, value: await readJsonValue(ctx, value, 'value') };
      printRecord(
        ctx,
        (await revisionCommand<{ object: unknown }>(ctx, options.revision, 'upload_session_object', params)).object,
      );
    });

  const files = sessions.command('files').description("a session's files");
  revisionOption(files.command('upload <session> <file>'))
    .description('streams a file into the session (a progress bar on stderr)')
    .option('--alias <alias>', "the file's alias in the session (default: the file's name)")
    .option('--content-type <type>', 'stored with the file and given back on download')
    .action(
      async (session: string, file: string, options: { revision: string; alias?: string; contentType?: string }) => {
        const ctx = context();
        const profile = await ctx.profile();
        const size = (await stat(file).catch(() => null))?.size;
        if (size === undefined) throw new CliError('invalid_arguments', `Cannot read ${file}.`, 2);
        const params: Params = { session_id: session, alias: options.alias ?? basename(file) };
        if (options.contentType !== undefined) params.content_type = options.contentType;
        const body = createReadStream(file).pipe(transferProgress(ctx, file, size));
        const response = await fetch(
          new URL(`/v1/revisions/${encodeURIComponent(options.revision)}/upload_session_file`, profile.url),
          {
            method: 'POST',
            headers: {
              ...(await credentialHeaders(await ctx.credential())),
              'content-type': 'application/octet-stream',
              'x-request-body': JSON.stringify(params),
            },
            body: Readable.toWeb(body) as ReadableStream,
            duplex: 'half',
          } as RequestInit,
        );
        if (!response.ok) await failure(response);
        printRecord(ctx, ((await response.json()) as { object: unknown }).object);
      },
    );
  revisionOption(files.command('download <session> <alias> <file>'))
    .description('streams a session file into a local file (a progress bar on stderr)')
    .action(async (session: string, alias: string, file: string, options: { revision: string }) => {
      const ctx = context();
      const profile = await ctx.profile();
      const response = await fetch(
        new URL(`/v1/revisions/${encodeURIComponent(options.revision)}/download_session_file`, profile.url),
        {
          method: 'POST',
          headers: { ...(await credentialHeaders(await ctx.credential())), 'content-type': 'application/json' },
          body: JSON.stringify({ session_id: session, alias }),
        },
      );
      if (!response.ok || !response.body) await failure(response);
      const envelope = JSON.parse(response.headers.get('x-response-body') ?? '{}') as {
        size?: number;
        content_type?: string | null;
      };
      await pipeline(
        Readable.fromWeb(response.body as never),
        transferProgress(ctx, file, envelope.size),
        createWriteStream(file),
      );
      printRecord(ctx, { file, size: envelope.size, content_type: envelope.content_type ?? null });
    });
}

function registerThread(sessions: Command, context: () => CliContext): void {
  const thread = sessions.command('thread').description("a session's thread items (named threads, default main)");
  revisionOption(thread.command('post <session>'))
    .description('posts an item: text, data, files (aliases of session files), or any of them')
    .option('--thread <thread>', 'the thread (default main)')
    .option('--text <text>')
    .option('--data <json>', 'any JSON, or @file')
    .option('--file <alias...>', 'session files to attach')
    .action(
      async (
        session: string,
        options: { revision: string; thread?: string; text?: string; data?: string; file?: string[] },
      ) => {
        const ctx = context();
        const params: Params = { session_id: session };
        if (options.thread !== undefined) params.thread = options.thread;
        if (options.text !== undefined) params.text = options.text;
        if (options.data !== undefined) params.data = await readJsonValue(ctx, options.data, '--data');
        if (options.file !== undefined) params.files = options.file;
        printRecord(
          ctx,
          (await revisionCommand<{ thread_item: unknown }>(ctx, options.revision, 'post_session_thread_item', params))
            .thread_item,
        );
      },
    );
  revisionOption(thread.command('list <session>'))
    .description("a thread's items, oldest first (every page)")
    .option('--thread <thread>', 'the thread (default main)')
    .action(async (session: string, options: { revision: string; thread?: string }) => {
      const ctx = context();
      const params: Params = { session_id: session };
      if (options.thread !== undefined) params.thread = options.thread;
      const rows = await allCursorPages(ctx, options.revision, 'list_session_thread_items', 'thread_items', params);
      printRows(ctx, rows, ['id', 'thread', 'text', 'files', 'created_at']);
    });
}

function registerSessionGraph(sessions: Command, context: () => CliContext): void {
  const graph = sessions.command('graph').description("a session's property graph");
  revisionOption(graph.command('mutate <session> <mutations>'))
    .description('mutate_session_graph: a JSON array of upsert_node, upsert_edge, delete, or @file')
    .action(async (session: string, mutations: string, options: { revision: string }) => {
      const ctx = context();
      printRecord(
        ctx,
        await revisionCommand(ctx, options.revision, 'mutate_session_graph', {
          session_id: session,
          mutations: await readJsonValue(ctx, mutations, 'mutations'),
        }),
      );
    });
  revisionOption(graph.command('elements <session>'))
    .description('every node and edge (every page), optionally of one kind or label')
    .option('--kind <kind>', 'node or edge')
    .option('--label <label>')
    .action(async (session: string, options: { revision: string; kind?: string; label?: string }) => {
      const ctx = context();
      const params: Params = { session_id: session };
      if (options.kind !== undefined) params.kind = options.kind;
      if (options.label !== undefined) params.label = options.label;
      const rows = await allCursorPages(ctx, options.revision, 'list_session_graph_elements', 'elements', params);
      printRows(ctx, rows, ['id', 'kind', 'label', 'source', 'target', 'properties']);
    });
  revisionOption(graph.command('neighbors <session> <node>'))
    .description("a node's neighbours: the edge and the node at its other end (every page)")
    .option('--direction <direction>', 'out, in or both')
    .option('--edge-label <label>')
    .action(
      async (session: string, node: string, options: { revision: string; direction?: string; edgeLabel?: string }) => {
        const ctx = context();
        const params: Params = { session_id: session, element_id: node };
        if (options.direction !== undefined) params.direction = options.direction;
        if (options.edgeLabel !== undefined) params.edge_label = options.edgeLabel;
        const rows = await allCursorPages(ctx, options.revision, 'list_session_graph_neighbors', 'neighbors', params);
        printRows(
          ctx,
          rows.map((row) => {
            const edge = row.edge as { id?: string; label?: string } | undefined;
            const other = row.node as { id?: string; label?: string } | undefined;
            return { ...row, id: edge?.id, edge_label: edge?.label, node_id: other?.id, node_label: other?.label };
          }),
          ['id', 'direction', 'edge_label', 'node_id', 'node_label'],
        );
      },
    );
  revisionOption(graph.command('query <session> <query>'))
    .description('query_session_graph: a JSON query (docs/graph.md), or @file')
    .action(async (session: string, query: string, options: { revision: string }) => {
      const ctx = context();
      printRecord(
        ctx,
        await revisionCommand(ctx, options.revision, 'query_session_graph', {
          session_id: session,
          query: await readJsonValue(ctx, query, 'query'),
        }),
      );
    });
}

/** Registers on `sessions`, and `events list` on the events group of run.ts. */
export function registerSessionContents(sessions: Command, events: Command, context: () => CliContext): void {
  registerObjects(sessions, context);
  registerThread(sessions, context);
  registerSessionGraph(sessions, context);
  revisionOption(events.command('list'))
    .description("a session's or an execution's events written so far, oldest first (every page)")
    .option('--session <session>')
    .option('--execution <execution>')
    .action(async (options: { revision: string; session?: string; execution?: string }) => {
      const ctx = context();
      if ((options.session === undefined) === (options.execution === undefined))
        throw new CliError('invalid_arguments', 'Give exactly one of --session and --execution.', 2);
      const rows =
        options.session !== undefined
          ? await allCursorPages(ctx, options.revision, 'list_session_events', 'events', {
              session_id: options.session,
            })
          : await allCursorPages(ctx, options.revision, 'list_execution_events', 'events', {
              execution_id: options.execution,
            });
      printRows(ctx, rows, ['id', 'at', 'kind', 'node', 'execution_id', 'attributes']);
    });
}
