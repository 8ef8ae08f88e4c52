/**
 * `wsctl executions|schedules|models|records|graph|sessions|members|credentials …`: the commands
 * of workflow, scheduler, ONNX, NLP and graph revisions (docs/commands.md) and the access routes
 * (docs/api.md), grouped as the docs group them. Revision commands go over the WebSocket.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { credentialHeaders, ok, type ExecutionRecord } from '../client/src/index.ts';
import { CliError, type CliContext } from './context.ts';
import { printRecord, printRows, readDocument, readJsonValue, readSecret } from './input.ts';
import { opsQuery } from './ops.ts';
import { allCursorPages, allPages, revisionCommand, type Params, type Rows } from './revision-calls.ts';
import { follow, report } from './run.ts';
import { failure, transferProgress } from './transfers.ts';

const revisionOption = (command: Command, what = 'the revision') =>
  command.requiredOption('--revision <revision>', what);

function registerExecutions(program: Command, context: () => CliContext, setExitCode: (code: number) => void): void {
  const executions = program.command('executions').description("a workflow revision's executions");
  revisionOption(executions.command('list'))
    .description("a session's executions, newest first (every page)")
    .requiredOption('--session <session>')
    .action(async (options: { revision: string; session: string }) => {
      const ctx = context();
      const rows = await allPages(ctx, options.revision, 'list_executions', 'executions', {
        session_id: options.session,
      });
      printRows(ctx, rows, ['id', 'status', 'definition_id', 'node_runs', 'created_at', 'ended_at']);
    });
  revisionOption(executions.command('get <execution>')).action(
    async (execution: string, options: { revision: string }) => {
      const ctx = context();
      const answer = await revisionCommand<{ execution: unknown }>(ctx, options.revision, 'get_execution', {
        execution_id: execution,
      });
      printRecord(ctx, answer.execution);
    },
  );
  revisionOption(executions.command('cancel <execution>')).action(
    async (execution: string, options: { revision: string }) => {
      const ctx = context();
      const answer = await revisionCommand<{ execution: unknown }>(ctx, options.revision, 'cancel_execution', {
        execution_id: execution,
      });
      printRecord(ctx, answer.execution);
    },
  );
  revisionOption(executions.command('rerun <execution>'))
    .description('runs an ended execution again in its session: a new one, rerun_of set')
    .option('--from-node <node>', 'the node to start at (default: the node the original stopped at)')
    .option('--input <json>', 'the input that node gets, as JSON or @file (default: the one it had, where kept)')
    .option('-f, --follow', 'follow the new execution live; exit non-zero unless it succeeds')
    .action(async (id: string, options: { revision: string; fromNode?: string; input?: string; follow?: boolean }) => {
      const ctx = context();
      const params: Params = { revision_id: options.revision, execution_id: id };
      if (options.fromNode !== undefined) params.from_node = options.fromNode;
      if (options.input !== undefined) params.input_data = await readJsonValue(ctx, options.input, '--input');
      const rpc = await ctx.rpc();
      try {
        const { execution } = (await rpc.request('rerun_execution', params)) as { execution: ExecutionRecord };
        if (!options.follow) {
          printRecord(ctx, execution);
          return;
        }
        ctx.output.out(`execution ${execution.id} ${execution.status} (rerun of ${id})`);
        setExitCode(report(ctx, await follow(ctx, rpc, options.revision, execution)));
      } finally {
        await rpc.close();
      }
    });
  revisionOption(executions.command('watch <execution>'))
    .description('follows an execution node by node until it ends (as run --follow); exit 0 only if it succeeded')
    .action(async (id: string, options: { revision: string }) => {
      const ctx = context();
      const rpc = await ctx.rpc();
      try {
        const { execution } = (await rpc.request('get_execution', {
          revision_id: options.revision,
          execution_id: id,
        })) as { execution: ExecutionRecord };
        const ended = execution.ended_at !== null ? execution : await follow(ctx, rpc, options.revision, execution);
        setExitCode(report(ctx, ended));
      } finally {
        await rpc.close();
      }
    });
}

function registerSessions(sessions: Command, context: () => CliContext): void {
  revisionOption(sessions.command('list'))
    .description("a revision's sessions, newest first (every page)")
    .action(async (options: { revision: string }) => {
      const ctx = context();
      printRows(ctx, await allPages(ctx, options.revision, 'list_sessions', 'sessions'), [
        'id',
        'alias',
        'status',
        'created_at',
      ]);
    });
  revisionOption(sessions.command('get <session>')).action(async (session: string, options: { revision: string }) => {
    const ctx = context();
    printRecord(
      ctx,
      (await revisionCommand<{ session: unknown }>(ctx, options.revision, 'get_session', { session_id: session }))
        .session,
    );
  });
  revisionOption(sessions.command('delete <session>')).action(
    async (session: string, options: { revision: string }) => {
      const ctx = context();
      printRecord(
        ctx,
        (await revisionCommand<{ session: unknown }>(ctx, options.revision, 'delete_session', { session_id: session }))
          .session,
      );
    },
  );
}

interface ScheduleOptions {
  revision: string;
  cron?: string;
  timezone?: string;
  alias?: string;
  targetRevision?: string;
  targetSession?: string;
  targetDefinition?: string;
  input?: string;
  enabled?: boolean;
}

function withScheduleOptions(command: Command): Command {
  return revisionOption(command, 'the scheduler revision')
    .option('--cron <expression>', '5 or 6 fields')
    .option('--timezone <zone>', 'an IANA zone (default UTC)')
    .option('--alias <alias>')
    .option('--target-revision <revision>', 'the workflow revision it fires into')
    .option('--target-session <session>')
    .option('--target-definition <definition>')
    .option('--input <json>', 'input_data as JSON, or @file')
    .option('--enabled', 'enable it')
    .option('--disabled', 'disable it');
}

async function scheduleFields(ctx: CliContext, options: ScheduleOptions & { disabled?: boolean }): Promise<Params> {
  const fields: Params = {};
  if (options.cron !== undefined) fields.cron = options.cron;
  if (options.timezone !== undefined) fields.timezone = options.timezone;
  if (options.alias !== undefined) fields.alias = options.alias;
  const target = [options.targetRevision, options.targetSession, options.targetDefinition];
  if (target.some((v) => v !== undefined)) {
    if (target.some((v) => v === undefined))
      throw new CliError(
        'invalid_arguments',
        'Give all of --target-revision, --target-session, --target-definition, or none.',
        2,
      );
    fields.target = {
      revision_id: options.targetRevision,
      session_id: options.targetSession,
      definition_id: options.targetDefinition,
    };
  }
  if (options.input !== undefined) fields.input_data = await readJsonValue(ctx, options.input, '--input');
  if (options.enabled && options.disabled)
    throw new CliError('invalid_arguments', 'Give --enabled or --disabled, not both.', 2);
  if (options.enabled) fields.enabled = true;
  if (options.disabled) fields.enabled = false;
  return fields;
}

function registerSchedules(program: Command, context: () => CliContext): void {
  const schedules = program.command('schedules').description("a scheduler revision's schedules");
  withScheduleOptions(schedules.command('create'))
    .description('a cron schedule firing into a workflow session')
    .action(async (options: ScheduleOptions & { disabled?: boolean }) => {
      const ctx = context();
      const fields = await scheduleFields(ctx, options);
      if (fields.cron === undefined || fields.target === undefined)
        throw new CliError('invalid_arguments', '--cron and the three --target-* options are required.', 2);
      printRecord(
        ctx,
        (await revisionCommand<{ schedule: unknown }>(ctx, options.revision, 'create_schedule', fields)).schedule,
      );
    });
  withScheduleOptions(schedules.command('update <schedule>'))
    .description('changes the fields given')
    .action(async (schedule: string, options: ScheduleOptions & { disabled?: boolean }) => {
      const ctx = context();
      const fields = await scheduleFields(ctx, options);
      printRecord(
        ctx,
        (
          await revisionCommand<{ schedule: unknown }>(ctx, options.revision, 'update_schedule', {
            schedule_id: schedule,
            ...fields,
          })
        ).schedule,
      );
    });
  for (const [name, method] of [
    ['get', 'get_schedule'],
    ['delete', 'delete_schedule'],
  ] as const) {
    revisionOption(schedules.command(`${name} <schedule>`), 'the scheduler revision').action(
      async (schedule: string, options: { revision: string }) => {
        const ctx = context();
        printRecord(
          ctx,
          (await revisionCommand<{ schedule: unknown }>(ctx, options.revision, method, { schedule_id: schedule }))
            .schedule,
        );
      },
    );
  }
  revisionOption(schedules.command('list'), 'the scheduler revision').action(async (options: { revision: string }) => {
    const ctx = context();
    printRows(ctx, await allPages(ctx, options.revision, 'list_schedules', 'schedules'), [
      'id',
      'alias',
      'cron',
      'timezone',
      'enabled',
      'next_fire_at',
    ]);
  });
  revisionOption(schedules.command('runs <schedule>'), 'the scheduler revision')
    .description("a schedule's runs, its history, newest first: the scheduler's list_executions (every page)")
    .action(async (schedule: string, options: { revision: string }) => {
      const ctx = context();
      // The specification names the listing `list_executions {schedule_id, start_session_id?}` →
      // `executions` (the runs), `last_session_id`; each run is `id, schedule_id, fired_at,
      // status, execution_id, error, limit` (and due_at, docs/scheduler.md).
      printRows(
        ctx,
        await allPages(ctx, options.revision, 'list_executions', 'executions', { schedule_id: schedule }),
        ['id', 'fired_at', 'status', 'execution_id', 'error', 'limit', 'due_at'],
      );
    });
  schedules
    .command('fire <schedule_id>')
    .description('fires a schedule once now (the operations API: wsctl ops login first)')
    .action(async (scheduleId: string) => {
      const ctx = context();
      const data = await opsQuery<{ fireScheduleNow: unknown }>(
        ctx,
        'mutation ($id: ID!) { fireScheduleNow(scheduleId: $id) { id status executionId error limit } }',
        { id: scheduleId },
      );
      if (data.fireScheduleNow === null) throw new CliError('not_found', 'No such schedule.');
      printRecord(ctx, data.fireScheduleNow);
    });
}

function registerModels(program: Command, context: () => CliContext): void {
  const models = program.command('models').description('ONNX model revisions');
  revisionOption(models.command('upload <file>'), 'the ONNX revision')
    .description('streams a model to the revision (a progress bar on stderr)')
    .action(async (file: string, options: { revision: string }) => {
      const ctx = context();
      const profile = await ctx.profile();
      const size = (await stat(file).catch(() => null))?.size;
      if (size === undefined) throw new CliError('invalid_arguments', `Cannot read ${file}.`, 2);
      const body = createReadStream(file).pipe(transferProgress(ctx, file, size));
      const response = await fetch(
        new URL(`/v1/revisions/${encodeURIComponent(options.revision)}/model`, profile.url),
        {
          method: 'PUT',
          headers: {
            ...(await credentialHeaders(await ctx.credential())),
            'content-type': 'application/octet-stream',
            'x-request-body': JSON.stringify({ size }),
          },
          body: Readable.toWeb(body) as ReadableStream,
          duplex: 'half',
        } as RequestInit,
      );
      if (!response.ok) await failure(response);
      printRecord(ctx, ((await response.json()) as { model: unknown }).model);
    });
  revisionOption(models.command('download <file>'), 'the ONNX revision')
    .description('streams the model to a file (a progress bar on stderr)')
    .action(async (file: string, options: { revision: string }) => {
      const ctx = context();
      const profile = await ctx.profile();
      const response = await fetch(
        new URL(`/v1/revisions/${encodeURIComponent(options.revision)}/model`, profile.url),
        {
          headers: await credentialHeaders(await ctx.credential()),
        },
      );
      if (!response.ok || !response.body) await failure(response);
      const envelope = JSON.parse(response.headers.get('x-response-body') ?? '{}') as {
        size?: number;
        sha256?: string;
      };
      await pipeline(
        Readable.fromWeb(response.body as never),
        transferProgress(ctx, file, envelope.size),
        createWriteStream(file),
      );
      printRecord(ctx, { file, size: envelope.size, sha256: envelope.sha256 });
    });
  revisionOption(models.command('run'), 'the ONNX revision')
    .description('run_model: tensors in ({name: {type, dims, data}}), outputs out')
    .requiredOption('--inputs <json>', 'the input tensors as JSON, or @file')
    .option('--outputs <names>', 'comma-separated output names')
    .action(async (options: { revision: string; inputs: string; outputs?: string }) => {
      const ctx = context();
      const params: Params = { inputs: await readJsonValue(ctx, options.inputs, '--inputs') };
      if (options.outputs !== undefined) params.outputs = options.outputs.split(',');
      printRecord(
        ctx,
        (await revisionCommand<{ outputs: unknown }>(ctx, options.revision, 'run_model', params)).outputs,
      );
    });
}

function registerDatasets(program: Command, context: () => CliContext): void {
  const records = program.command('records').description('NLP dataset revisions');
  revisionOption(records.command('upload <file>'), 'the NLP revision')
    .description('records from a JSON array, YAML, or JSON Lines (.jsonl) file')
    .action(async (file: string, options: { revision: string }) => {
      const ctx = context();
      const list = file.endsWith('.jsonl')
        ? ((await import('node:fs/promises')).readFile(file, 'utf8').then((text) =>
            text
              .split('\n')
              .filter((line) => line.trim() !== '')
              .map((line) => JSON.parse(line) as unknown),
          ) as Promise<unknown[]>)
        : (readDocument(ctx, file) as Promise<unknown[]>);
      printRecord(ctx, await revisionCommand(ctx, options.revision, 'upload_records', { records: await list }));
    });
  revisionOption(records.command('list'), 'the NLP revision')
    .description('every record (every page)')
    .action(async (options: { revision: string }) => {
      const ctx = context();
      printRows(ctx, await allCursorPages(ctx, options.revision, 'list_records', 'records'), ['id', 'text', 'labels']);
    });

  const graph = program.command('graph').description('graph revisions');
  revisionOption(graph.command('mutate <mutations>'), 'the graph revision')
    .description('mutate_graph: a JSON array of mutations, or @file')
    .action(async (mutations: string, options: { revision: string }) => {
      const ctx = context();
      printRecord(
        ctx,
        await revisionCommand(ctx, options.revision, 'mutate_graph', {
          mutations: await readJsonValue(ctx, mutations, 'mutations'),
        }),
      );
    });
  revisionOption(graph.command('query <query>'), 'the graph revision')
    .description('query_graph: a JSON query (docs/graph.md), or @file')
    .action(async (query: string, options: { revision: string }) => {
      const ctx = context();
      printRecord(
        ctx,
        await revisionCommand(ctx, options.revision, 'query_graph', {
          query: await readJsonValue(ctx, query, 'query'),
        }),
      );
    });
}

type AccessTarget = 'organization' | 'blob' | 'user';

function target(value: string, allowed: readonly AccessTarget[]): AccessTarget {
  if (!(allowed as readonly string[]).includes(value))
    throw new CliError('invalid_arguments', `target must be one of ${allowed.join(', ')}.`, 2);
  return value as AccessTarget;
}

function registerAccess(program: Command, context: () => CliContext): void {
  const members = program.command('members').description('memberships of an organization or a blob');
  members.command('list <target> <target_id>').action(async (kind: string, id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    const path = { target: target(kind, ['organization', 'blob']) as 'organization', target_id: id };
    const answer = await ok(rest.GET('/v1/members/target/{target}/{target_id}', { params: { path } }));
    printRows(ctx, answer.members as unknown as Rows, ['user_id', 'role', 'created_at']);
  });
  members
    .command('add <target> <target_id> <user_id>')
    .description('adds or changes a membership')
    .requiredOption('--role <role>', 'read, write or admin')
    .action(async (kind: string, id: string, user: string, options: { role: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      if (!['read', 'write', 'admin'].includes(options.role))
        throw new CliError('invalid_arguments', '--role must be one of read, write, admin.', 2);
      const body = {
        target: target(kind, ['organization', 'blob']) as 'organization',
        target_id: id,
        user_id: user,
        role: options.role as 'read',
      };
      printRecord(ctx, (await ok(rest.POST('/v1/members', { body }))).member);
    });
  members.command('remove <target> <target_id> <user_id>').action(async (kind: string, id: string, user: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    const body = { target: target(kind, ['organization', 'blob']) as 'organization', target_id: id, user_id: user };
    printRecord(ctx, (await ok(rest.DELETE('/v1/members', { body }))).member);
  });

  const credentials = program.command('credentials').description('stored credentials (secrets never shown)');
  const targets = ['organization', 'blob', 'user'] as const;
  credentials.command('list <target> <target_id>').action(async (kind: string, id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    const path = { target: target(kind, targets), target_id: id };
    const answer = await ok(rest.GET('/v1/credentials/target/{target}/{target_id}', { params: { path } }));
    printRows(ctx, answer.credentials as unknown as Rows, ['id', 'name', 'created_at']);
  });
  credentials
    .command('create <target> <target_id> <name>')
    .description('stores a secret (--secret - reads it from stdin, env:NAME from a variable)')
    .requiredOption('--secret <source>', '- (stdin) or env:NAME; never the secret itself')
    .action(async (kind: string, id: string, name: string, options: { secret: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      const body = {
        target: target(kind, targets),
        target_id: id,
        name,
        secret: await readSecret(ctx, options.secret, '--secret'),
      };
      printRecord(ctx, (await ok(rest.POST('/v1/credentials', { body }))).credential);
    });
  credentials.command('delete <credential_id>').action(async (id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    printRecord(ctx, (await ok(rest.DELETE('/v1/credentials', { body: { id } }))).credential);
  });
}

/** Registers the groups of this file; `sessions` is the group resources.ts made. */
export function registerWorkspace(
  program: Command,
  context: () => CliContext,
  sessions: Command,
  setExitCode: (code: number) => void,
): void {
  registerExecutions(program, context, setExitCode);
  registerSessions(sessions, context);
  registerSchedules(program, context);
  registerModels(program, context);
  registerDatasets(program, context);
  registerAccess(program, context);
}
