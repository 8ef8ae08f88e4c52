// The README's "Try it" section, run as a reader runs it: every ```sh block of the section, line by
// line in one bash (so `REV=$(…)` carries to the lines after it), against a listening control
// plane, a runner and the operations API. What is substituted: the default addresses (8080, 8081)
// by the test's, `npx wsctl` by the bin it resolves to (cli/wsctl.js, checked below; npx itself
// would cost an npm start per line), HOME and DATA_DIR by the test's directories (DATA_DIR holding
// the secrets.json the README reads the operations token from). Each command must exit 0, or 1
// where the README shows an `error:` line; the `# …` lines right under a command are its output,
// matched line for line (`…` stands for anything, numbers and timings may differ), so the README
// cannot drift from what the service and wsctl print.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildTestApp } from './helpers/app.ts';
import { startOpsApp } from './helpers/ops.ts';
import { startEngine } from './helpers/runner.ts';

const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'cli', 'wsctl.js');
const OPS_TOKEN = 'readme-ops-token';

interface Step {
  command: string;
  /** The `# …` lines right under the command: what it prints. */
  expected: string[];
}

/** The ```sh blocks of the README's "Try it" section, as commands and the output shown under each. */
function tryItSteps(readme: string): Step[] {
  const start = readme.indexOf('\n## Try it\n');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end);
  const steps: Step[] = [];
  for (const [, block] of section.matchAll(/```sh\n([\s\S]*?)```/g)) {
    let pending = '';
    let last: Step | undefined;
    for (const line of block!.split('\n')) {
      if (pending) {
        pending += `\n${line}`;
      } else if (line.trim() === '') {
        last = undefined;
        continue;
      } else if (line.startsWith('#')) {
        last?.expected.push(line.replace(/^# ?/, ''));
        continue;
      } else {
        pending = line;
      }
      // A line ending in `\` or `|` goes on on the next one.
      if (/(\\|\|)\s*$/.test(line)) continue;
      last = { command: pending, expected: [] };
      steps.push(last);
      pending = '';
    }
  }
  return steps;
}

/** A line shown in the README as a pattern: `…` is anything, numbers and timings any. */
function linePattern(shown: string): RegExp {
  let source = '';
  // An id cut short (`4e1146de-…`) is a UUID, or the start of one.
  const marked = shown.replace(/[0-9a-f]{8}-…/g, '\uE000');
  for (const [token] of marked.matchAll(/\uE000|…|\d+(?:\.\d+)? m?s\b|\d+| {2,}|[^\uE000…\d ]+| /g)) {
    if (token === '\uE000') source += '[0-9a-f]{8}-.*?';
    else if (token === '…') source += '.*?';
    else if (/^\d+(\.\d+)? m?s$/.test(token)) source += '[\\d.]+ m?s';
    else if (/^\d+$/.test(token)) source += '\\d+';
    else if (/^ {2,}$/.test(token)) source += ' {2,}';
    else source += token.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** A command's output as lines (curl ends without a newline; wsctl with one). */
function lines(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

const { app, config, db, databaseUrl } = await buildTestApp(t, { OPS_TOKEN });
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
await startEngine(t, databaseUrl);
const { ops } = await startOpsApp(t, { config, db, databaseUrl });
await ops.listen({ port: 0, host: '127.0.0.1' });
const opsBase = `http://127.0.0.1:${(ops.server.address() as AddressInfo).port}`;

const home = await mkdtemp(join(tmpdir(), 'readme-test-'));
t.teardown(() => rm(home, { recursive: true, force: true }));
const dataDir = join(home, 'data');
await mkdir(dataDir);
await writeFile(join(dataDir, 'secrets.json'), JSON.stringify({ OPS_TOKEN }));

const address = (text: string) =>
  text.replaceAll('http://127.0.0.1:8080', base).replaceAll('http://127.0.0.1:8081', opsBase);

t.test('npx wsctl is the bin the README block runs', async (t) => {
  t.equal(await realpath(join(ROOT, 'node_modules', '.bin', 'wsctl')), await realpath(BIN));
});

t.test("the README's Try it blocks run as shown", async (t) => {
  const steps = tryItSteps(await readFile(join(ROOT, 'README.md'), 'utf8'));
  t.ok(steps.filter((step) => step.command.includes('npx wsctl')).length >= 8, `${steps.length} commands`);
  const out = join(home, 'out');
  await mkdir(out);
  // Each step runs in the one shell (its variables carry on), its streams and status kept apart.
  const script = [
    'set -o pipefail',
    `wsctl() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; }`,
    ...steps.map(
      (step, i) =>
        `{\n${address(step.command).replaceAll('npx wsctl', 'wsctl')}\n} >${out}/${i}.out 2>${out}/${i}.err; echo $? >${out}/${i}.code`,
    ),
  ].join('\n');
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, DATA_DIR: dataDir };
  for (const name of ['XDG_CONFIG_HOME', 'WSCTL_CONFIG', 'WSCTL_PROFILE', 'WSCTL_URL']) delete env[name];
  const shell = spawn('bash', ['-c', script], { cwd: home, env, stdio: ['ignore', 'inherit', 'inherit'] });
  t.equal(await new Promise((resolve) => shell.on('close', resolve)), 0, 'the shell ran to the end');

  for (const [i, step] of steps.entries()) {
    const code = Number(await readFile(join(out, `${i}.code`), 'utf8'));
    const stdout = lines(await readFile(join(out, `${i}.out`), 'utf8'));
    const stderr = lines(await readFile(join(out, `${i}.err`), 'utf8'));
    const shownErrors = step.expected.filter((line) => line.startsWith('error: ')).map(address);
    const shownOutput = step.expected.filter((line) => !line.startsWith('error: ')).map(address);
    const name = step.command.split('\n')[0]!;
    t.equal(code, shownErrors.length > 0 ? 1 : 0, `${name}: exit code${code > 1 ? `: ${stderr.join('\n')}` : ''}`);
    if (shownOutput.length > 0) {
      t.equal(stdout.length, shownOutput.length, `${name}: the lines shown: ${JSON.stringify(stdout)}`);
      for (const [j, line] of shownOutput.entries()) t.match(stdout[j] ?? '', linePattern(line), `${name}: ${line}`);
    }
    if (shownErrors.length > 0) {
      t.equal(stderr.length, shownErrors.length, `${name}: the error lines shown`);
      for (const [j, line] of shownErrors.entries()) t.match(stderr[j] ?? '', linePattern(line), `${name}: ${line}`);
    }
  }
});
