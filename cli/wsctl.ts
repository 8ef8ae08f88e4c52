/**
 * wsctl, the command line of workspace-service (docs/cli.md). Every failure ends in one line on
 * stderr, `error: <code>: <message>` (with the limit when the refusal carries one), and a
 * non-zero exit code: 1 for a refusal or a failed run, 2 for wrong arguments.
 */
import { Command, CommanderError } from 'commander';
import { ApiError, ConnectionError } from '../client/src/index.ts';
import { registerAuth } from './auth.ts';
import { CliContext, CliError, processOutput } from './context.ts';
import { registerDefinitions } from './definitions.ts';
import { registerOps } from './ops.ts';
import { profilePath } from './profiles.ts';
import { registerResources } from './resources.ts';
import { registerRun } from './run.ts';

/** The error line for anything a command threw, and its exit code. */
export function errorLine(error: unknown): { line: string; exitCode: number } {
  if (error instanceof ApiError) return { line: `error: ${error.describe()}`, exitCode: 1 };
  if (error instanceof CliError) return { line: `error: ${error.code}: ${error.message}`, exitCode: error.exitCode };
  if (error instanceof ConnectionError) return { line: `error: connection: ${error.message}`, exitCode: 1 };
  if (error instanceof TypeError && error.message === 'fetch failed') {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { line: `error: connection: ${cause?.code ?? cause?.message ?? error.message}`, exitCode: 1 };
  }
  return { line: `error: internal_error: ${(error as Error)?.message ?? String(error)}`, exitCode: 1 };
}

/** Runs wsctl with `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const output = processOutput();
  let exitCode = 0;
  const program = new Command('wsctl')
    .description('workspace-service from the command line')
    .option('-p, --profile <name>', 'the profile to use', process.env.WSCTL_PROFILE ?? 'default')
    .exitOverride()
    // Usage errors keep the one-line form too: `error: invalid_arguments: unknown command 'x'`.
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'error: invalid_arguments: ')) });
  const context = () =>
    new CliContext({ profileName: program.opts<{ profile: string }>().profile, path: profilePath(), output });
  registerAuth(program, context);
  registerResources(program, context);
  registerDefinitions(program, context);
  registerRun(program, context, (code) => (exitCode = code));
  registerOps(program, context);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    output.endProgress();
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    const { line, exitCode: code } = errorLine(error);
    output.err(line);
    return code;
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
