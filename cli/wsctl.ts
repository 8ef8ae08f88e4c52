/**
 * wsctl, the command line of workspace-service (docs/cli.md). Every failure ends in one line on
 * stderr, `error: <code>: <message>` (with the limit when the refusal carries one), and a
 * non-zero exit code: 1 for a refusal or a failed run, 2 for wrong arguments.
 */
import { Command, CommanderError } from 'commander';
import { ApiError, ConnectionError } from '../client/src/index.ts';
import { readFileSync } from 'node:fs';
import { registerAuth } from './auth.ts';
import { registerCompletion } from './completion.ts';
import { CliContext, CliError, processIo, streamOutput, type Io, type Output } from './context.ts';
import { registerDefinitions } from './definitions.ts';
import { registerDocuments } from './documents.ts';
import { registerOps } from './ops.ts';
import { profilePath } from './profiles.ts';
import { registerResources } from './resources.ts';
import { registerRun } from './run.ts';
import { registerSessionContents } from './session-contents.ts';
import { registerSettings } from './settings.ts';
import { registerUsers } from './users.ts';
import { registerWorkspace } from './workspace.ts';

const VERSION = (JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

/** The error line for anything a command threw, and its exit code; `url` is what was called. */
export function errorLine(error: unknown, url?: string): { line: string; exitCode: number } {
  const at = url ? ` (${url})` : '';
  if (error instanceof ApiError) return { line: `error: ${error.describe()}`, exitCode: 1 };
  if (error instanceof CliError) return { line: `error: ${error.code}: ${error.message}`, exitCode: error.exitCode };
  if (error instanceof ConnectionError) return { line: `error: connection: ${error.message}${at}`, exitCode: 1 };
  if (error instanceof TypeError && error.message === 'fetch failed') {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { line: `error: connection: ${cause?.code ?? cause?.message ?? error.message}${at}`, exitCode: 1 };
  }
  return { line: `error: internal_error: ${(error as Error)?.message ?? String(error)}`, exitCode: 1 };
}

/** The command tree (and the context its actions use), as `main` runs it with `io`. */
export function buildProgram(
  io: Io,
  output: Output,
  setExitCode: (code: number) => void,
): { program: Command; current: () => CliContext | undefined } {
  const program = new Command('wsctl')
    .description('workspace-service from the command line')
    .version(VERSION, '-V, --version', "wsctl's version")
    .option('-p, --profile <name>', 'the profile to use', io.env.WSCTL_PROFILE ?? 'default')
    .option('-o, --output <format>', 'json, yaml or table (default: records JSON, listings a table)')
    .option('-q, --quiet', 'ids only')
    .exitOverride()
    .configureOutput({
      // Help and --version go to io's streams, not the process's (main may run inside another program).
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // Usage errors keep the one-line form too: `error: invalid_arguments: unknown command 'x'`.
      outputError: (text, write) => write(text.replace(/^error: /, 'error: invalid_arguments: ')),
    });
  let current: CliContext | undefined;
  const context = () => {
    if (current) return current;
    const options = program.opts<{ profile: string; output?: string; quiet?: boolean }>();
    if (options.output !== undefined && !['json', 'yaml', 'table'].includes(options.output))
      throw new CliError('invalid_arguments', '-o must be one of json, yaml, table.', 2);
    current = new CliContext({
      profileName: options.profile,
      path: profilePath(io.env),
      output,
      io,
      format: options.output as 'json' | 'yaml' | 'table' | undefined,
      quiet: options.quiet === true,
    });
    return current;
  };
  registerAuth(program, context, io.env);
  const groups = registerResources(program, context);
  const users = registerUsers(program, context);
  registerSettings({ ...groups, users }, context);
  registerWorkspace(program, context, groups.sessions, setExitCode);
  registerCompletion(program, context);
  registerDefinitions(program, context);
  const events = registerRun(program, context, setExitCode);
  registerSessionContents(groups.sessions, events, context);
  registerOps(program, context);
  registerDocuments(program, context);
  return { program, current: () => current };
}

/**
 * Runs wsctl with `argv` (without node and the script) on `io` (the bin passes the process's
 * streams, environment and Ctrl-C); resolves with the exit code. It never ends the process: the
 * bin (wsctl.js) does, so tests and other programs can run commands in-process.
 */
export async function main(argv: string[], io: Io): Promise<number> {
  const output = streamOutput(io);
  let exitCode = 0;
  const { program, current } = buildProgram(io, output, (code) => (exitCode = code));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    output.endProgress();
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    const { line, exitCode: code } = errorLine(error, current()?.target);
    output.err(line);
    return code;
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2), processIo());
