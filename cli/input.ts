/** Reading wsctl's inputs (secrets, JSON/YAML files, JSON values) and printing records. */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { CliError, type CliContext } from './context.ts';

/** All of stdin, as text. */
async function readStdin(ctx: CliContext): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A secret named by where to read it, never given itself: `-` reads it from stdin, `env:NAME`
 * from the environment variable NAME. A secret written on the command line would be visible to
 * every user of the machine in the process list (and kept in the shell's history), so anything
 * else is refused.
 */
export async function readSecret(ctx: CliContext, value: string, option: string): Promise<string> {
  let secret: string;
  if (value === '-') secret = (await readStdin(ctx)).trim();
  else if (value.startsWith('env:') && value.length > 4) secret = (ctx.io.env[value.slice(4)] ?? '').trim();
  else
    throw new CliError(
      'invalid_arguments',
      `${option} takes - (read the secret from stdin) or env:NAME (from the environment variable NAME), not the secret itself: a command line is visible to every user in the process list.`,
      2,
    );
  if (!secret) throw new CliError('invalid_arguments', `The secret for ${option} is empty.`, 2);
  return secret;
}

/** The origin of a `--url` (`http://127.0.0.1:8080`); anything but http(s) is an argument error. */
export function originOf(url: string, option = '--url'): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError('invalid_arguments', `${option} must be an http:// or https:// URL: ${url}`, 2);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new CliError('invalid_arguments', `${option} must be an http:// or https:// URL: ${url}`, 2);
  return parsed.origin;
}

/** A JSON or YAML document (by extension; `-` is stdin, parsed as YAML, which includes JSON). */
export async function readDocument(ctx: CliContext, file: string): Promise<unknown> {
  const text =
    file === '-'
      ? await readStdin(ctx)
      : await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
          throw new CliError('invalid_arguments', `Cannot read ${file}: ${error.code ?? error.message}.`, 2);
        });
  try {
    return extname(file).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new CliError(
      'invalid_arguments',
      `${file} is not valid ${extname(file).toLowerCase() === '.json' ? 'JSON' : 'YAML'}: ${(error as Error).message.split('\n')[0]}`,
      2,
    );
  }
}

/** A JSON value given on the command line, or `@file` for one in a file. */
export async function readJsonValue(ctx: CliContext, value: string, what: string): Promise<unknown> {
  if (value.startsWith('@')) return readDocument(ctx, value.slice(1));
  try {
    return JSON.parse(value);
  } catch {
    throw new CliError('invalid_arguments', `${what} must be JSON (or @file): ${value}`, 2);
  }
}

/**
 * A record: indented JSON (default), YAML, or `field  value` lines with `-o table`; with `-q` its
 * id alone.
 */
export function printRecord(ctx: CliContext, record: unknown): void {
  if (ctx.quiet) {
    ctx.output.out(idOf(record));
    return;
  }
  if (ctx.format === 'yaml') ctx.output.out(toYaml(record).trimEnd());
  else if (ctx.format === 'table' && typeof record === 'object' && record !== null && !Array.isArray(record)) {
    const entries = Object.entries(record);
    const width = Math.max(...entries.map(([key]) => key.length));
    for (const [key, value] of entries) ctx.output.out(`${key.padEnd(width)}  ${format(value)}`);
  } else ctx.output.out(JSON.stringify(record, null, 2));
}

/**
 * A listing: a header row then one row per record, the named fields in aligned columns (default);
 * a JSON array or YAML list of the whole records with `-o json|yaml`; ids alone with `-q`.
 * `header: false` for the second and later pages of one listing.
 */
export function printRows(
  ctx: CliContext,
  rows: ReadonlyArray<Record<string, unknown>>,
  fields: string[],
  options: { header?: boolean } = {},
): void {
  if (ctx.quiet) {
    for (const row of rows) ctx.output.out(idOf(row, fields[0]));
    return;
  }
  if (ctx.format === 'json') {
    ctx.output.out(JSON.stringify(rows, null, 2));
    return;
  }
  if (ctx.format === 'yaml') {
    if (rows.length > 0) ctx.output.out(toYaml(rows).trimEnd());
    return;
  }
  const cells = rows.map((row) => fields.map((field) => format(row[field])));
  const widths = fields.map((field, i) => Math.max(field.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((value, i) => (i === values.length - 1 ? value : value.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  if (options.header !== false) ctx.output.out(line(fields.map((field) => field.toUpperCase())));
  for (const row of cells) ctx.output.out(line(row));
}

/** The id of a record (`id`, else the given field, else the first string field). */
function idOf(record: unknown, field = 'id'): string {
  if (typeof record !== 'object' || record === null) return format(record);
  const fields = record as Record<string, unknown>;
  if (fields.id !== undefined) return format(fields.id);
  if (fields[field] !== undefined) return format(fields[field]);
  const nested = Object.values(fields).find((value) => typeof value === 'object' && value !== null && 'id' in value);
  return nested ? format((nested as { id: unknown }).id) : format(Object.values(fields)[0]);
}

function format(value: unknown): string {
  if (value === null || value === undefined) return '-';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
