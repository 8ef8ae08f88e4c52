// docs/cli.md against wsctl's command definitions (commander): every command is shown in one of
// the page's code blocks and every option is named on the page, so the page cannot fall behind.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import t from 'tap';
import { buildProgram } from '../cli/wsctl.ts';
import type { Io, Output } from '../cli/context.ts';

const silent: Output = { out() {}, err() {}, progress() {}, endProgress() {}, interactive: false };
const io: Io = { stdout: { write() {} }, stderr: { write() {} }, stdin: [], env: {} };
const { program } = buildProgram(io, silent, () => {});
const page = await readFile(join(import.meta.dirname, '..', 'docs', 'cli.md'), 'utf8');
const code = [...page.matchAll(/```(?:sh)?\n([\s\S]*?)```/g)].map((match) => match[1]!).join('\n');
const lines = code.split('\n').filter((line) => /^(\$ )?wsctl\b|\|\s*(npx )?wsctl\b/.test(line));

/** Every command that runs something (no subcommands), as its path of names. */
function leaves(command: Command, path: string[] = []): { path: string[]; command: Command }[] {
  const visible = command.commands.filter((sub) => !sub.name().startsWith('__'));
  if (visible.length === 0) return [{ path, command }];
  return visible.flatMap((sub) => leaves(sub, [...path, sub.name()]));
}

const all = leaves(program);
t.ok(all.length >= 60, `${all.length} commands`);

t.test('every command appears in a code block of docs/cli.md', async (t) => {
  for (const { path } of all) {
    // The group's words in order on one wsctl line, the last one as a word (`list | get S | …`).
    const pattern = new RegExp(`\\bwsctl\\b.*\\b${path.slice(0, -1).join('\\s+')}\\b.*(\\s|\\|)${path.at(-1)}\\b`);
    const single = new RegExp(`\\bwsctl\\b.*\\s${path[0]}\\b`);
    t.ok(
      lines.some((line) => (path.length === 1 ? single : pattern).test(line)),
      `wsctl ${path.join(' ')} is shown`,
    );
  }
});

t.test('every option is named on the page', async (t) => {
  const options = new Set<string>();
  for (const { command } of all) for (const option of command.options) if (option.long) options.add(option.long);
  for (const option of program.options) if (option.long) options.add(option.long);
  for (const option of options) t.ok(page.includes(option), `${option} is documented`);
});
