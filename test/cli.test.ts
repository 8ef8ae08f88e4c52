// wsctl against a listening control plane, a runner and the operations API: sign-in forms and the
// profile file's 0600 mode, resources, definition push with check_definition's errors and their
// paths, `run --follow` to success and to failure (exit codes), `events tail`, the ops
// subcommands, and refusals printed as one line. Commands run in-process through `main` (what the
// bin runs) on captured streams; a few run the real bin, for what only a process shows: its exit
// codes and streams, and the re-exec under Node 24 when an older Node starts it.
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { main } from '../cli/wsctl.ts';
import { buildTestApp } from './helpers/app.ts';
import { startIdentityProvider } from './helpers/jwks.ts';
import { startOpsApp } from './helpers/ops.ts';
import { addModel } from './helpers/onnx-models.ts';
import { uniqueAlias } from './helpers/resources.ts';
import { startEngine } from './helpers/runner.ts';
import { registerRunner } from '../shared/runner-registry.ts';

const idp = await startIdentityProvider(t);
const { app, config, db, databaseUrl } = await buildTestApp(t, idp.env);
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
await startEngine(t, databaseUrl);
const { ops } = await startOpsApp(t, { config, db, databaseUrl });
await ops.listen({ port: 0, host: '127.0.0.1' });
const opsBase = `http://127.0.0.1:${(ops.server.address() as AddressInfo).port}`;

const home = await mkdtemp(join(tmpdir(), 'wsctl-test-'));
t.teardown(() => rm(home, { recursive: true, force: true }));
const profileFile = join(home, 'wsctl', 'profiles.json');
const CLI = join(import.meta.dirname, '..', 'cli', 'wsctl.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs wsctl in-process with `args`, as the bin does, on captured streams: `input` is stdin, the
 * environment holds XDG_CONFIG_HOME (the test's directory) and `env` alone.
 */
async function wsctl(args: string[], input = '', env: Record<string, string> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: [input],
    env: { XDG_CONFIG_HOME: home, HOME: home, ...env },
  });
  return { code, stdout, stderr };
}

/** Runs the real bin, `cli/wsctl.js`, in a process of its own (the same profile directory). */
function bin(args: string[], input = '', extra: NodeJS.ProcessEnv = {}): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home, ...extra };
  delete env.WSCTL_CONFIG;
  delete env.WSCTL_PROFILE;
  delete env.WSCTL_URL;
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Runs wsctl and fails the test unless it exits 0; returns stdout. */
async function ok(t: Test, args: string[], input = '', env: Record<string, string> = {}): Promise<string> {
  const run = await wsctl(args, input, env);
  t.equal(run.code, 0, `wsctl ${args.join(' ')} exits 0${run.code === 0 ? '' : `: ${run.stderr}`}`);
  return run.stdout;
}

const GOOD = `# a greeting in two steps
start: greet
nodes:
  greet:
    processor: logic.code
    config:
      code: "export default async (input) => ({hello: input.name})"
    routes:
      success: shout
  shout:
    processor: logic.code
    config:
      code: "export default async (input) => ({loud: input.hello.toUpperCase()})"
`;

const BAD = JSON.stringify({
  start: 'greet',
  nodes: {
    greet: { processor: 'logic.code', config: { code: 'export default async () => 1' }, routes: { success: 'pause' } },
    pause: { processor: 'logic.sleep', config: { seconds: -1 }, routes: { success: 'nowhere' } },
  },
});

const FAILING = JSON.stringify({
  graph: {
    start: 'first',
    nodes: {
      first: {
        processor: 'logic.code',
        config: { code: 'export default async (input) => input' },
        routes: { success: 'boom' },
      },
      boom: {
        processor: 'logic.code',
        config: { code: "export default async () => { throw new Error('no such customer') }" },
      },
    },
  },
  alias: 'failing',
});

let orgAlias = '';
let blobAlias = '';
let revision = '';
let userId = '';

t.test('login --anonymous writes the profile with mode 0600', async (t) => {
  const out = await ok(t, ['login', '--url', base, '--anonymous']);
  t.match(out, /^signed in to http:\/\/127\.0\.0\.1:\d+ as [0-9a-f-]{36} \(profile default\)\n$/);
  t.equal((await stat(profileFile)).mode & 0o777, 0o600);
  t.equal((await stat(join(home, 'wsctl'))).mode & 0o777, 0o700);
  const saved = JSON.parse(await readFile(profileFile, 'utf8'));
  t.match(saved.profiles.default, {
    url: base,
    access_token: String,
    refresh_token: String,
    access_expires_at: String,
  });
  userId = saved.profiles.default.user_id;
  const whoami = JSON.parse(await ok(t, ['whoami']));
  t.equal(whoami.id, userId);
});

t.test('a profile file readable by others is put back to 0600, with a warning', async (t) => {
  await chmod(profileFile, 0o644);
  const run = await wsctl(['whoami']);
  t.equal(run.code, 0);
  t.match(run.stderr, /^warning: .*profiles\.json was readable by others \(mode 644\); set to 600\n$/);
  t.equal((await stat(profileFile)).mode & 0o777, 0o600);
});

t.test('organizations, blobs, revisions and keys', async (t) => {
  orgAlias = uniqueAlias('org');
  const org = JSON.parse(await ok(t, ['orgs', 'create', orgAlias, '--name', 'Acme']));
  t.match(org, { alias: orgAlias, name: 'Acme', owner_id: userId });
  t.match(
    await ok(t, ['orgs', 'list']),
    new RegExp(`^ID +ALIAS +VISIBILITY +NAME\\n${org.id}  ${orgAlias} +private +Acme\\n$`),
  );
  t.equal(await ok(t, ['-q', 'orgs', 'list']), `${org.id}\n`, '-q: ids only');
  t.match(JSON.parse(await ok(t, ['-o', 'json', 'orgs', 'list'])), [{ id: org.id, alias: orgAlias }]);
  t.match(await ok(t, ['-o', 'yaml', 'orgs', 'get', orgAlias]), new RegExp(`^id: ${org.id}\\n`));
  t.match(await ok(t, ['-o', 'table', 'orgs', 'get', orgAlias]), new RegExp(`^id +${org.id}\\n`));
  blobAlias = uniqueAlias('blob');
  const created = JSON.parse(await ok(t, ['blobs', 'create', orgAlias, blobAlias, '--type', 'svc.compute.workflow']));
  revision = created.revision.id;
  t.match(
    await ok(t, ['blobs', 'list', orgAlias]),
    new RegExp(`\\n${created.blob.id}  ${blobAlias} +svc\\.compute\\.workflow`),
  );
  t.match(await ok(t, ['revisions', 'list', orgAlias, blobAlias]), new RegExp(`\\n${revision}  1 +ready  `));
  const key = JSON.parse(await ok(t, ['keys', 'create', 'organization', orgAlias, '--role', 'write', '--name', 'ci']));
  t.match(key.key, /^wsk_/);
  t.match(await ok(t, ['keys', 'list', 'organization', orgAlias]), new RegExp(`\\n${key.id}  ci +write +`));

  // The key signs in another profile (read from stdin, so it is in no argv).
  t.match(
    await ok(t, ['--profile', 'ci', 'login', '--url', base, '--api-key', '-'], `${key.key}\n`),
    /with an API key \(profile ci\)/,
  );
  t.match(JSON.parse(await ok(t, ['--profile', 'ci', 'orgs', 'get', orgAlias])), { alias: orgAlias });
  JSON.parse(await ok(t, ['keys', 'revoke', key.id]));
  const revoked = await wsctl(['--profile', 'ci', 'orgs', 'get', orgAlias]);
  t.equal(revoked.code, 1);
  t.match(revoked.stderr, /^error: unauthorized: .+\n$/, 'a revoked key: one line');
  const overSocket = await wsctl(['--profile', 'ci', 'definition', 'list', '--revision', revision]);
  t.equal(overSocket.code, 1);
  t.match(overSocket.stderr, /^error: unauthorized: .+\n$/, 'a refused WebSocket upgrade: the same line');
});

t.test('refusals print one line with the limit, and exit 1', async (t) => {
  const run = await wsctl(['orgs', 'create', uniqueAlias('org')]);
  t.equal(run.code, 1);
  t.equal(run.stdout, '');
  t.match(run.stderr, /^error: limit_exceeded: [^\n]+ \(limit platform\.orgs_per_user = 1, held 1\)\n$/);
  const missing = await wsctl(['orgs', 'get', 'no-such-org']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^error: not_found: [^\n]+\n$/);
  const usage = await wsctl(['orgs', 'create']);
  t.equal(usage.code, 2, 'a missing argument is a usage error');
  t.equal(usage.stderr, "error: invalid_arguments: missing required argument 'alias'\n");
  const badUrl = await wsctl(['login', '--url', 'nonsense', '--anonymous']);
  t.equal(badUrl.code, 2);
  t.equal(badUrl.stderr, 'error: invalid_arguments: --url must be an http:// or https:// URL: nonsense\n');
  const nobody = await wsctl(['--profile', 'nobody', 'orgs', 'list']);
  t.equal(nobody.code, 1);
  t.match(nobody.stderr, /^error: not_signed_in: No profile "nobody" in .+: run wsctl login\.\n$/);
});

t.test('definition push shows check_definition errors with their paths, then creates a good one', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'wsctl-defs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'bad.json'), BAD);
  await writeFile(join(dir, 'good.yaml'), GOOD);
  await writeFile(join(dir, 'failing.json'), FAILING);

  const bad = await wsctl(['definition', 'push', join(dir, 'bad.json'), '--revision', revision]);
  t.equal(bad.code, 1);
  const lines = bad.stdout.trim().split('\n');
  t.ok(
    lines.some((line) => /^pause\.config\.seconds: invalid_config: /.test(line)),
    'the config error with its path',
  );
  t.ok(
    lines.some((line) => /^pause\.routes\.success: route_target_not_found: /.test(line)),
    'the route error with its path',
  );
  t.match(bad.stderr, /error: invalid_definition: check_definition found \d+ errors; nothing was created\.\n$/);

  const good = JSON.parse(
    await ok(t, ['definition', 'push', join(dir, 'good.yaml'), '--revision', revision, '--alias', 'greeter']),
  );
  t.match(good, { alias: 'greeter', category: 'workflow' });
  t.match(JSON.parse(await ok(t, ['definition', 'push', join(dir, 'failing.json'), '--revision', revision])), {
    alias: 'failing',
  });
  t.match(await ok(t, ['definition', 'list', '--revision', revision]), / {2}greeter +workflow /);
});

t.test('run --follow shows the run node by node and exits 0 when it succeeds', async (t) => {
  const run = await wsctl([
    'run',
    '--revision',
    revision,
    '--definition',
    'greeter',
    '--input',
    '{"name":"ada"}',
    '--follow',
  ]);
  t.equal(run.code, 0, run.stderr);
  const lines = run.stdout.trim().split('\n');
  t.match(lines[0], /^execution [0-9a-f-]{36} queued$/);
  t.match(lines[1], /^✓ greet \(logic\.code\) → success {2}\d+(\.\d+)? m?s$/);
  t.match(lines[2], /^✓ shout \(logic\.code\) → success {2}\d+(\.\d+)? m?s$/);
  t.match(lines[3], /^succeeded in \d+(\.\d+)? m?s \(2 node runs\)$/);
  t.same(JSON.parse(lines.slice(4).join('\n')), { loud: 'ADA' });
  t.notMatch(run.stderr, /\[\d+ nodes? · /, 'on a non-terminal, no progress lines: each node once, one total');
  t.equal(run.stdout.match(/ in \d/g)?.length, 1, 'one total');
});

t.test('run --follow exits 1 when the execution fails, naming the error', async (t) => {
  const run = await wsctl(['run', '--revision', revision, '--definition', 'failing', '--input', '{}', '--follow']);
  t.equal(run.code, 1);
  t.match(
    run.stdout,
    /\n✓ first \(logic\.code\) → success {2}[^\n]+\n✗ boom \(logic\.code\) failed [^\n]*no such customer[^\n]*\nfailed in [^\n]+\(2 node runs\)\n$/,
  );
  t.match(run.stderr, /\nerror: [a-z_]+: [^\n]*no such customer[^\n]*\n$/);
});

t.test("run --follow prints a workflow's logs and errors with their control characters escaped", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'wsctl-hostile-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const code =
    'export default async () => { ' +
    "console.log('\\u001b[2J\\u001b]0;pwned\\u0007\\u001b]52;c;ZWNobyBvd25lZA==\\u0007'); " +
    "console.log('fine\\n✓ fake (logic.code) → success  1 ms'); " +
    "throw new Error('bad\\u001b[31m\\rerror: not this one\\u009b2J') }";
  await writeFile(
    join(dir, 'hostile.json'),
    JSON.stringify({ graph: { start: 'only', nodes: { only: { processor: 'logic.code', config: { code } } } } }),
  );
  const pushed = JSON.parse(await ok(t, ['definition', 'push', join(dir, 'hostile.json'), '--revision', revision]));
  const run = await wsctl(['run', '--revision', revision, '--definition', pushed.id, '--input', '{}', '--follow']);
  t.equal(run.code, 1, run.stderr);
  // wsctl's own redraw of the progress line is the one control sequence allowed.
  const redraw = new RegExp(String.raw`\r\u001b\[K`, 'g');
  const control = new RegExp(String.raw`[\u0000-\u0008\u000b-\u001f\u007f-\u009f]`);
  for (const [name, text] of [
    ['stdout', run.stdout],
    ['stderr', run.stderr.replace(redraw, '')],
  ] as const) {
    t.notOk(control.test(text), `${name} holds no control character: ${JSON.stringify(text)}`);
  }
  t.match(run.stdout, /\\u001b\[2J\\u001b\]0;pwned\\u0007/, 'the escapes are shown, escaped');
  t.notOk(/^✓ fake/m.test(run.stdout), 'a log cannot start a line of its own');
  t.match(run.stdout, /fine\\n✓ fake/);
  t.notOk(/^error: not this one/m.test(run.stderr), 'nor can an error');
});

t.test('secrets are taken from stdin or the environment, never from the command line', async (t) => {
  for (const option of ['--api-key', '--refresh-token']) {
    const refused = await wsctl([
      '--profile',
      'argv',
      'login',
      '--url',
      base,
      option,
      'wsk_secret_on_the_command_line',
    ]);
    t.equal(refused.code, 2, option);
    t.match(refused.stderr, /process list/, option);
  }
  const ops = await wsctl(['ops', 'login', '--url', opsBase, '--token', 'test-ops-token']);
  t.equal(ops.code, 2, '--token too');
  t.match(
    await ok(
      t,
      ['--profile', 'from-env', 'ops', 'login', '--url', opsBase, '--token', 'env:WSCTL_TEST_OPS_TOKEN'],
      '',
      {
        WSCTL_TEST_OPS_TOKEN: 'test-ops-token',
      },
    ),
    /: ok \(version /,
    'env:NAME reads the environment',
  );
});

t.test('events tail prints an execution from its start to its end', async (t) => {
  const created = JSON.parse(
    await ok(t, ['run', '--revision', revision, '--definition', 'greeter', '--input', '{"name":"bo"}']),
  );
  const out = await ok(t, ['events', 'tail', '--revision', revision, '--execution', created.id, '--from-start']);
  const kinds = out
    .trim()
    .split('\n')
    .map((line) => line.split('  ')[2]);
  t.same(kinds, [
    'execution.started',
    'node.started',
    'node.finished',
    'node.started',
    'node.finished',
    'execution.finished',
  ]);
  const ended = await wsctl(['events', 'tail', '--revision', revision, '--execution', created.id]);
  t.equal(ended.code, 0, 'an ended execution without --from-start: nothing more will come');
  t.equal(ended.stdout, '');
  t.match(ended.stderr, /^execution [0-9a-f-]{36} already ended \(succeeded\); --from-start prints its events\n$/);
});

t.test('a refresh token signs in another profile', async (t) => {
  const saved = JSON.parse(await readFile(profileFile, 'utf8'));
  const refreshToken = saved.profiles.default.refresh_token;
  t.match(
    await ok(t, ['--profile', 'second', 'login', '--url', base, '--refresh-token', '-'], refreshToken),
    new RegExp(`as ${userId} \\(profile second\\)`),
  );
  t.equal(JSON.parse(await ok(t, ['--profile', 'second', 'whoami'])).id, userId);
});

t.test('an access token about to expire is refreshed first, and the rotated pair saved', async (t) => {
  const file = JSON.parse(await readFile(profileFile, 'utf8'));
  const before = { ...file.profiles.second };
  file.profiles.second.access_expires_at = new Date(Date.now() - 1000).toISOString();
  await writeFile(profileFile, JSON.stringify(file));
  t.equal(JSON.parse(await ok(t, ['--profile', 'second', 'whoami'])).id, userId);
  const after = JSON.parse(await readFile(profileFile, 'utf8')).profiles.second;
  t.not(after.refresh_token, before.refresh_token, 'the refresh token rotated');
  // (The access token itself may be byte-identical: a JWT minted in the same second with the same claims.)
  t.ok(Date.parse(after.access_expires_at) > Date.now(), 'a fresh expiry, stored with the new pair');
  t.equal((await stat(profileFile)).mode & 0o777, 0o600);
});

t.test('ops: login, runners, queues, limit overrides, retention sweep', async (t) => {
  const bad = await wsctl(['ops', 'login', '--url', opsBase, '--token', '-'], 'wrong');
  t.equal(bad.code, 1);
  t.match(bad.stderr, /^error: unauthorized: [^\n]+\n$/);
  t.notOk(JSON.parse(await readFile(profileFile, 'utf8')).profiles.default.ops_token, 'a refused token is not kept');
  t.match(await ok(t, ['ops', 'login', '--url', opsBase, '--token', '-'], 'test-ops-token'), /: ok \(version /);
  const registered = await registerRunner(db, { host: 'cli-test-host', pid: 4242, version: '0.1.0' }, () => {});
  t.teardown(() => registered.stop());
  t.match(await ok(t, ['ops', 'runners']), new RegExp(`^${registered.id} +cli-test-host +4242 +true +`, 'm'));
  t.match(await ok(t, ['ops', 'queues']), /^executions {2}/m);
  const set = JSON.parse(await ok(t, ['ops', 'limits', 'set', 'platform.orgs_per_user', 'user', userId, '2']));
  t.match(set.override, { limitId: 'platform.orgs_per_user', value: 2, setBy: 'ops:wsctl' });
  t.match(await ok(t, ['ops', 'limits', 'list', 'user', userId]), /^platform\.orgs_per_user +2 +ops:wsctl +/m);
  JSON.parse(await ok(t, ['orgs', 'create', uniqueAlias('org')]));
  const refused = await wsctl(['ops', 'limits', 'set', 'platform.orgs_per_user', 'user', userId, '"many"']);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /^error: invalid_value_type: [^\n]+\n$/);
  t.match(JSON.parse(await ok(t, ['ops', 'limits', 'clear', 'platform.orgs_per_user', 'user', userId])), {
    override: null,
    previous: { value: 2 },
  });
  t.match(JSON.parse(await ok(t, ['ops', 'retention', 'sweep'])), { status: 'completed', executionsRemoved: 0 });
  // An operator without an account of the service: a profile holding the ops API alone.
  t.match(
    await ok(t, ['--profile', 'operator', 'ops', 'login', '--url', opsBase, '--token', '-'], 'test-ops-token'),
    /: ok \(version /,
  );
  t.match(await ok(t, ['--profile', 'operator', 'ops', 'queues']), /^executions {2}/m);
  const noAccount = await wsctl(['--profile', 'operator', 'orgs', 'list']);
  t.equal(noAccount.code, 1);
  t.match(noAccount.stderr, /^error: not_signed_in: Profile "operator" holds no credential: run wsctl login\.\n$/);
});

t.test('run reuses one session per definition and checks the definition before creating anything', async (t) => {
  const sessionsBefore = (await ok(t, ['-q', 'sessions', 'list', '--revision', revision])).split('\n').length;
  const first = JSON.parse(await ok(t, ['run', '--revision', revision, '--definition', 'greeter', '--input', '{}']));
  const second = JSON.parse(await ok(t, ['run', '--revision', revision, '--definition', 'greeter', '--input', '{}']));
  t.equal(first.session_id, second.session_id, 'one session for both runs');
  const session = JSON.parse(await ok(t, ['sessions', 'get', 'run.greeter', '--revision', revision]));
  t.equal(session.id, first.session_id, 'named for the definition');
  const missing = await wsctl(['run', '--revision', revision, '--definition', 'no-such-definition']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^error: not_found: No definition no-such-definition [^\n]+\n$/);
  const sessionsAfter = (await ok(t, ['-q', 'sessions', 'list', '--revision', revision])).split('\n').length;
  t.ok(sessionsAfter <= sessionsBefore + 1, 'at most the one run.greeter session was made');
});

t.test('executions list, get, watch, cancel; sessions list, get, delete', async (t) => {
  const run = JSON.parse(
    await ok(t, ['run', '--revision', revision, '--definition', 'greeter', '--input', '{"name":"cy"}']),
  );
  const watched = await wsctl(['executions', 'watch', run.id, '--revision', revision]);
  t.equal(watched.code, 0, watched.stderr);
  t.match(watched.stdout, /succeeded in [^\n]+\n\{\n {2}"loud": "CY"\n\}\n$/);
  const ids = (await ok(t, ['-q', 'executions', 'list', '--revision', revision, '--session', 'run.greeter'])).split(
    '\n',
  );
  t.ok(ids.includes(run.id), 'the run is listed');
  t.match(
    await ok(t, ['executions', 'list', '--revision', revision, '--session', 'run.greeter']),
    /^ID +STATUS +DEFINITION_ID/,
  );
  t.match(JSON.parse(await ok(t, ['executions', 'get', run.id, '--revision', revision])), {
    id: run.id,
    status: 'succeeded',
  });
  t.match(JSON.parse(await ok(t, ['executions', 'cancel', run.id, '--revision', revision])), { status: 'succeeded' });
  const made = JSON.parse(await ok(t, ['sessions', 'create', '--revision', revision, '--alias', 'to-delete']));
  t.match(await ok(t, ['sessions', 'list', '--revision', revision]), new RegExp(`\\n${made.id}  to-delete `));
  t.match(JSON.parse(await ok(t, ['sessions', 'delete', 'to-delete', '--revision', revision])), { status: 'deleting' });
});

t.test('definition push --replace keeps the alias; definition delete frees it', async (t) => {
  const dir = await mkdtemp(join(home, 'defs-'));
  await writeFile(join(dir, 'good.yaml'), GOOD);
  const push = (extra: string[]) =>
    wsctl(['definition', 'push', join(dir, 'good.yaml'), '--revision', revision, '--alias', 'edited', ...extra]);
  const first = JSON.parse((await push([])).stdout);
  const again = await push([]);
  t.equal(again.code, 1);
  t.match(again.stderr, /^error: alias_taken: /);
  const replaced = await push(['--replace']);
  t.equal(replaced.code, 0, replaced.stderr);
  t.not(JSON.parse(replaced.stdout).id, first.id, 'a new definition under the same alias');
  t.equal((await ok(t, ['definition', 'list', '--revision', revision])).match(/ edited /g)?.length, 1);
  t.match(JSON.parse(await ok(t, ['definition', 'delete', 'edited', '--revision', revision])), { alias: 'edited' });
  t.notMatch(await ok(t, ['definition', 'list', '--revision', revision]), / edited /);
});

t.test('members and credentials', async (t) => {
  const other = await ok(t, ['--profile', 'other', 'login', '--url', base, '--anonymous']);
  const otherId = /as ([0-9a-f-]{36})/.exec(other)![1]!;
  t.match(JSON.parse(await ok(t, ['members', 'add', 'organization', orgAlias, otherId, '--role', 'read'])), {
    user_id: otherId,
    role: 'read',
  });
  t.match(await ok(t, ['members', 'list', 'organization', orgAlias]), new RegExp(`\\n${otherId} +read `));
  t.match(JSON.parse(await ok(t, ['members', 'remove', 'organization', orgAlias, otherId])), { user_id: otherId });
  const credential = JSON.parse(
    await ok(t, ['credentials', 'create', 'organization', orgAlias, 'smtp', '--secret', '-'], 'hunter2\n'),
  );
  t.match(credential, { name: 'smtp' });
  t.notMatch(JSON.stringify(credential), /hunter2/);
  t.equal(await ok(t, ['-q', 'credentials', 'list', 'organization', orgAlias]), `${credential.id}\n`);
  t.match(JSON.parse(await ok(t, ['credentials', 'delete', credential.id])), { id: credential.id });
});

t.test('schedules create, get, update, list, runs, fire, delete', async (t) => {
  const created = JSON.parse(
    await ok(t, ['blobs', 'create', orgAlias, uniqueAlias('sched'), '--type', 'svc.compute.scheduler']),
  );
  const rev = created.revision.id;
  const session = JSON.parse(await ok(t, ['sessions', 'create', '--revision', revision, '--alias', 'scheduled']));
  const schedule = JSON.parse(
    await ok(t, [
      'schedules',
      'create',
      '--revision',
      rev,
      '--cron',
      '0 0 1 1 *',
      '--alias',
      'yearly',
      '--target-revision',
      revision,
      '--target-session',
      session.id,
      '--target-definition',
      'greeter',
      '--input',
      '{"name":"sc"}',
    ]),
  );
  t.match(schedule, { alias: 'yearly', cron: '0 0 1 1 *', enabled: true });
  t.match(JSON.parse(await ok(t, ['schedules', 'get', 'yearly', '--revision', rev])), { id: schedule.id });
  t.match(JSON.parse(await ok(t, ['schedules', 'update', 'yearly', '--revision', rev, '--disabled'])), {
    enabled: false,
  });
  t.equal(await ok(t, ['-q', 'schedules', 'list', '--revision', rev]), `${schedule.id}\n`);
  t.equal(
    await ok(t, ['schedules', 'runs', schedule.id, '--revision', rev]),
    'ID  FIRED_AT  STATUS  EXECUTION_ID  ERROR  LIMIT  DUE_AT\n',
    "the run record's fields, as the specification names them",
  );
  const fired = JSON.parse(await ok(t, ['schedules', 'fire', schedule.id]));
  t.match(fired, { status: 'started', executionId: String });
  t.match(
    await ok(t, ['schedules', 'runs', schedule.id, '--revision', rev]),
    new RegExp(`\\n${fired.id} +\\d{4}-[^ ]+Z +started +${fired.executionId} +- +- +-\\n$`),
  );
  t.match(JSON.parse(await ok(t, ['-o', 'json', 'schedules', 'runs', schedule.id, '--revision', rev])), [
    { id: fired.id, schedule_id: schedule.id, fired_at: String, status: 'started', execution_id: fired.executionId },
  ]);
  t.match(JSON.parse(await ok(t, ['schedules', 'delete', 'yearly', '--revision', rev])), { id: schedule.id });
});

t.test('records, graph and models on their blob types (turned on by the operator)', async (t) => {
  const { id: orgId } = JSON.parse(await ok(t, ['orgs', 'get', orgAlias]));
  for (const limit of ['nlp.enabled', 'graphdb.enabled', 'onnx.enabled'])
    await ok(t, ['ops', 'limits', 'set', limit, 'org', orgId, 'true']);
  await ok(t, ['ops', 'limits', 'set', 'platform.blobs_per_org', 'org', orgId, '10']);
  const dir = await mkdtemp(join(home, 'blobs-'));
  const revisionOf = async (type: string) =>
    JSON.parse(await ok(t, ['blobs', 'create', orgAlias, uniqueAlias('b'), '--type', type])).revision.id as string;

  const nlp = await revisionOf('svc.dataset.nlp');
  await writeFile(join(dir, 'records.jsonl'), '{"text":"hello"}\n{"text":"world","labels":["x"]}\n');
  t.match(JSON.parse(await ok(t, ['records', 'upload', join(dir, 'records.jsonl'), '--revision', nlp])), {
    uploaded: 2,
  });
  t.match(
    await ok(t, ['records', 'list', '--revision', nlp]),
    /^ID +TEXT +LABELS\n[^\n]+hello[^\n]*\n[^\n]+world +\["x"\]\n$/,
  );

  const graph = await revisionOf('svc.graph.graphdb');
  const mutated = JSON.parse(
    await ok(t, [
      'graph',
      'mutate',
      '[{"op":"upsert_node","id":"a","label":"P"},{"op":"upsert_node","id":"b","label":"P"},{"op":"upsert_edge","id":"e","label":"knows","source":"a","target":"b"}]',
      '--revision',
      graph,
    ]),
  );
  t.equal(mutated.elements.length, 3);
  t.match(
    JSON.parse(
      await ok(t, ['graph', 'query', '{"start":{"ids":["a"]},"steps":[{"direction":"out"}]}', '--revision', graph]),
    ),
    { nodes: Array },
  );

  const onnx = await revisionOf('svc.model.onnx');
  await writeFile(join(dir, 'add.onnx'), addModel());
  const uploaded = await wsctl(['models', 'upload', join(dir, 'add.onnx'), '--revision', onnx]);
  t.equal(uploaded.code, 0, uploaded.stderr);
  t.match(JSON.parse(uploaded.stdout), { size: addModel().length });
  t.match(uploaded.stderr, /add\.onnx {2}[\d.]+ MiB \/ [\d.]+ MiB {2}100%\n/, 'a progress line');
  t.match(JSON.parse(await ok(t, ['models', 'download', join(dir, 'copy.onnx'), '--revision', onnx])), {
    size: addModel().length,
  });
  t.same(await readFile(join(dir, 'copy.onnx')), addModel());
  const ran = JSON.parse(
    await ok(t, [
      'models',
      'run',
      '--revision',
      onnx,
      '--inputs',
      '{"A":{"type":"float32","dims":[2],"data":[1,2]},"B":{"type":"float32","dims":[2],"data":[3,4]}}',
    ]),
  );
  t.same(ran.C.data, [4, 6]);
});

t.test('--version, completion scripts, and a connection error naming the URL', async (t) => {
  t.match(await ok(t, ['--version']), /^\d+\.\d+\.\d+\n$/);
  for (const shell of ['bash', 'zsh', 'fish']) t.match(await ok(t, ['completion', shell]), /wsctl __complete/);
  const words = (await ok(t, ['__complete', 'schedules'])).split('\n');
  for (const name of ['create', 'get', 'update', 'delete', 'list', 'runs', 'fire', '--output', '--quiet'])
    t.ok(words.includes(name), name);
  await ok(t, ['--profile', 'down', 'login', '--url', base, '--anonymous']);
  const file = JSON.parse(await readFile(profileFile, 'utf8'));
  file.profiles.down.url = 'http://127.0.0.1:9';
  await writeFile(profileFile, JSON.stringify(file), { mode: 0o600 });
  const down = await wsctl(['--profile', 'down', 'orgs', 'list']);
  t.equal(down.code, 1);
  t.match(down.stderr, /^error: connection: [^\n]+ \(http:\/\/127\.0\.0\.1:9\)\n$/);
});

t.test('events tail --session says it is waiting', async (t) => {
  const run = await wsctl([
    'events',
    'tail',
    '--revision',
    revision,
    '--session',
    'run.greeter',
    '--from-start',
    '--count',
    '1',
  ]);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stderr, /^waiting for events of session run\.greeter \(Ctrl-C stops\)\n$/);
  t.equal(run.stdout.trim().split('\n').length, 1);
});

t.test('users: get, update oneself, organizations, limits, who stands where', async (t) => {
  t.equal(JSON.parse(await ok(t, ['users', 'get'])).id, userId, 'default me');
  const alias = uniqueAlias('ada');
  t.match(JSON.parse(await ok(t, ['users', 'update', '--name', 'Ada', '--alias', alias])), {
    id: userId,
    name: 'Ada',
    alias,
  });
  t.match(JSON.parse(await ok(t, ['users', 'get', alias])), { id: userId, name: 'Ada' });
  t.match(JSON.parse(await ok(t, ['users', 'update', 'me', '--no-alias'])), { id: userId, alias: null });
  const none = await wsctl(['users', 'update']);
  t.equal(none.code, 2);
  t.match(await ok(t, ['users', 'orgs']), new RegExp(`^ID +ALIAS +VISIBILITY +NAME\n[^\n]+  ${orgAlias} `));
  t.match(
    await ok(t, ['users', 'limits']),
    /^ID +VALUE +SOURCE +DEFAULT +HELD +UNIT\nplatform\.orgs_per_user +\d+ +\w+ +1 +\d+ +count\n/,
  );
  t.match(await ok(t, ['users', 'list', 'organization', orgAlias]), new RegExp(`\n${userId} .* admin +owner\n`));
});

t.test('service accounts: create, list, impersonate into a profile, delete', async (t) => {
  const alias = uniqueAlias('bot');
  const bot = JSON.parse(await ok(t, ['service-accounts', 'create', 'Build bot', '--alias', alias]));
  t.match(bot, { alias, name: 'Build bot', kind: 'service', owner_id: userId });
  t.equal(await ok(t, ['-q', 'service-accounts', 'list']), `${bot.id}\n`);
  const printed = JSON.parse(await ok(t, ['service-accounts', 'impersonate', alias]));
  t.match(printed, { acting_token: String, expires_in: 3600, user: { id: bot.id } });
  t.match(
    await ok(t, ['service-accounts', 'impersonate', alias, '--save-as', 'acting']),
    new RegExp(`^acting as ${bot.id} until [^ ]+ \\(profile acting; `),
  );
  t.match(JSON.parse(await ok(t, ['--profile', 'acting', 'whoami'])), { id: bot.id, kind: 'service' });
  t.match(JSON.parse(await ok(t, ['--profile', 'acting', 'users', 'update', '--name', 'Robot'])), {
    id: bot.id,
    name: 'Robot',
  });
  const same = await wsctl(['service-accounts', 'impersonate', alias, '--save-as', 'default']);
  t.equal(same.code, 2, 'the profile in use is not overwritten');
  t.match(JSON.parse(await ok(t, ['users', 'delete', bot.id])), { id: bot.id });
  t.equal(await ok(t, ['-q', 'service-accounts', 'list']), '');
  const gone = await wsctl(['--profile', 'acting', 'whoami']);
  t.equal(gone.code, 1);
  t.match(gone.stderr, /^error: unauthorized: /);
});

t.test("login --google-id-token signs in with an identity provider's ID token, read from stdin", async (t) => {
  const token = await idp.sign({ sub: 'cli-sub', name: 'Gina', email: 'gina@example.com', email_verified: true });
  t.match(
    await ok(t, ['--profile', 'google', 'login', '--url', base, '--google-id-token', '-'], token),
    /^signed in to [^ ]+ as [0-9a-f-]{36} \(profile google\)\n$/,
  );
  t.match(JSON.parse(await ok(t, ['--profile', 'google', 'whoami'])), { kind: 'human', name: 'Gina' });
  const refused = await wsctl(['--profile', 'google2', 'login', '--url', base, '--google-id-token', '-'], 'not.a.jwt');
  t.equal(refused.code, 1);
  t.match(refused.stderr, /^error: unauthorized: /);
});

t.test('orgs and blobs update, limits, metadata of blobs and revisions', async (t) => {
  t.match(JSON.parse(await ok(t, ['orgs', 'update', orgAlias, '--name', 'Acme Two', '--visibility', 'public'])), {
    alias: orgAlias,
    name: 'Acme Two',
    visibility: 'public',
  });
  t.match(JSON.parse(await ok(t, ['orgs', 'update', orgAlias, '--visibility', 'private'])), {
    visibility: 'private',
  });
  const empty = await wsctl(['orgs', 'update', orgAlias]);
  t.equal(empty.code, 2);
  const renamed = uniqueAlias('blob');
  t.match(JSON.parse(await ok(t, ['blobs', 'update', orgAlias, blobAlias, '--name', 'Greeter', '--alias', renamed])), {
    alias: renamed,
    name: 'Greeter',
  });
  blobAlias = renamed;
  t.match(await ok(t, ['orgs', 'limits', orgAlias]), /\nplatform\.blobs_per_org +\d+ +\w+ +3 +\d+ +count\n/);
  t.match(
    await ok(t, ['blobs', 'limits', orgAlias, blobAlias]),
    /\nplatform\.revisions_per_blob +\d+ +\w+ +2 +1 +count\n/,
  );
  t.match(JSON.parse(await ok(t, ['-o', 'json', 'blobs', 'limits', orgAlias, blobAlias]))[0], {
    group: 'platform',
    id: 'platform.revisions_per_blob',
    kind: 'quota',
  });

  t.match(JSON.parse(await ok(t, ['blobs', 'metadata', 'set', orgAlias, blobAlias, 'tags', '["a",{"b":1}]'])), {
    alias: 'tags',
    entries: ['a', { b: 1 }],
    updated_at: String,
  });
  t.same(JSON.parse(await ok(t, ['blobs', 'metadata', 'get', orgAlias, blobAlias, 'tags'])).entries, ['a', { b: 1 }]);
  const dir = await mkdtemp(join(home, 'metadata-'));
  await writeFile(join(dir, 'notes.json'), '[{"note":"first"}]');
  t.match(JSON.parse(await ok(t, ['revisions', 'metadata', 'set', revision, 'notes', `@${join(dir, 'notes.json')}`])), {
    alias: 'notes',
    entries: [{ note: 'first' }],
  });
  t.same(JSON.parse(await ok(t, ['revisions', 'metadata', 'get', revision, 'notes'])).entries, [{ note: 'first' }]);
  const notArray = await wsctl(['revisions', 'metadata', 'set', revision, 'notes', '{"a":1}']);
  t.equal(notArray.code, 2);
  t.equal(notArray.stderr, 'error: invalid_arguments: entries must be a JSON array.\n');
});

t.test('session contents: objects, files, thread items, graph; event listings', async (t) => {
  const dir = await mkdtemp(join(home, 'contents-'));
  const session = JSON.parse(await ok(t, ['sessions', 'create', '--revision', revision, '--alias', 'contents']));
  const on = ['--revision', revision];
  t.match(
    JSON.parse(await ok(t, ['sessions', 'objects', 'put', 'contents', 'settings', '{"currency":"EUR"}', ...on])),
    {
      alias: 'settings',
      kind: 'object',
      value: { currency: 'EUR' },
    },
  );
  await writeFile(join(dir, 'hello.txt'), 'hello world');
  const uploaded = await wsctl([
    'sessions',
    'files',
    'upload',
    'contents',
    join(dir, 'hello.txt'),
    '--content-type',
    'text/plain',
    ...on,
  ]);
  t.equal(uploaded.code, 0, uploaded.stderr);
  t.match(JSON.parse(uploaded.stdout), { alias: 'hello.txt', kind: 'file', size: 11, content_type: 'text/plain' });
  t.match(uploaded.stderr, /hello\.txt {2}0\.0 MiB \/ 0\.0 MiB {2}100%\n/, 'a progress line');
  t.match(
    await ok(t, ['sessions', 'objects', 'list', 'contents', ...on]),
    /^ID +ALIAS +KIND +SIZE +CONTENT_TYPE +UPDATED_AT\n(?=[\s\S]* {2}settings +object )(?=[\s\S]* {2}hello\.txt +file +11 +text\/plain )/,
  );
  t.match(
    JSON.parse(await ok(t, ['sessions', 'files', 'download', 'contents', 'hello.txt', join(dir, 'copy.txt'), ...on])),
    {
      size: 11,
      content_type: 'text/plain',
    },
  );
  t.equal(await readFile(join(dir, 'copy.txt'), 'utf8'), 'hello world');
  const missing = await wsctl(['sessions', 'files', 'download', 'contents', 'settings', join(dir, 'x'), ...on]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^error: not_found: /, 'an object is not a file');

  const item = JSON.parse(
    await ok(t, [
      'sessions',
      'thread',
      'post',
      'contents',
      '--text',
      'hi',
      '--data',
      '{"n":1}',
      '--file',
      'hello.txt',
      ...on,
    ]),
  );
  t.match(item, { thread: 'main', text: 'hi', data: { n: 1 }, files: ['hello.txt'] });
  t.match(
    await ok(t, ['sessions', 'thread', 'list', 'contents', ...on]),
    new RegExp(`\n${item.id} +main +hi +\\["hello\\.txt"\\] `),
  );
  t.equal(await ok(t, ['-q', 'sessions', 'thread', 'list', 'contents', '--thread', 'other', ...on]), '');

  const mutations =
    '[{"op":"upsert_node","id":"a","label":"P"},{"op":"upsert_node","id":"b","label":"P"},{"op":"upsert_edge","id":"e","label":"knows","source":"a","target":"b"}]';
  t.equal(JSON.parse(await ok(t, ['sessions', 'graph', 'mutate', 'contents', mutations, ...on])).elements.length, 3);
  t.equal(await ok(t, ['-q', 'sessions', 'graph', 'elements', 'contents', '--kind', 'node', ...on]), 'a\nb\n');
  t.match(
    await ok(t, ['sessions', 'graph', 'neighbors', 'contents', 'a', '--direction', 'out', ...on]),
    /^ID +DIRECTION +EDGE_LABEL +NODE_ID +NODE_LABEL\ne +out +knows +b +P\n$/,
  );
  const query = JSON.parse(
    await ok(t, [
      'sessions',
      'graph',
      'query',
      'contents',
      '{"start":{"ids":["a"]},"steps":[{"direction":"out"}]}',
      ...on,
    ]),
  );
  t.same(query.nodes.map((node: { id: string }) => node.id).sort(), ['a', 'b'], 'the start and one hop out');

  const kinds = (await ok(t, ['events', 'list', '--session', 'contents', ...on]))
    .trim()
    .split('\n')
    .map((line) => line.split(/ {2,}/)[2]);
  t.equal(kinds[0], 'KIND', 'a header row');
  t.ok(kinds.includes('object.written'), kinds.join(','));
  t.ok(kinds.includes('thread.item_posted') || kinds.some((kind) => kind?.startsWith('thread.')), kinds.join(','));
  const run = JSON.parse(
    await ok(t, ['run', '--definition', 'greeter', '--session', session.id, '--input', '{"name":"ev"}', ...on]),
  );
  const watched = await wsctl(['executions', 'watch', run.id, ...on]);
  t.equal(watched.code, 0, watched.stderr);
  const executionKinds = JSON.parse(await ok(t, ['-o', 'json', 'events', 'list', '--execution', run.id, ...on])).map(
    (event: { kind: string }) => event.kind,
  );
  t.equal(executionKinds[0], 'execution.started');
  t.equal(executionKinds.at(-1), 'execution.finished');
  const both = await wsctl(['events', 'list', ...on]);
  t.equal(both.code, 2);
});

t.test('executions rerun; definition list --category; the API documents', async (t) => {
  const on = ['--revision', revision];
  const first = JSON.parse(await ok(t, ['run', '--definition', 'greeter', '--input', '{"name":"re"}', ...on]));
  t.equal((await wsctl(['executions', 'watch', first.id, ...on])).code, 0);
  const rerun = await wsctl([
    'executions',
    'rerun',
    first.id,
    '--from-node',
    'greet',
    '--input',
    '{"name":"zed"}',
    '--follow',
    ...on,
  ]);
  t.equal(rerun.code, 0, rerun.stderr);
  t.match(rerun.stdout, new RegExp(`^execution [0-9a-f-]{36} queued \\(rerun of ${first.id}\\)\n`));
  t.match(rerun.stdout, /succeeded in [^\n]+\n\{\n {2}"loud": "ZED"\n\}\n$/);
  const again = JSON.parse(await ok(t, ['executions', 'rerun', first.id, '--input', '{"hello":"x"}', ...on]));
  t.match(again, { rerun_of: first.id, status: 'queued', input_data: { hello: 'x' } }, 'from the node it stopped at');
  const missing = await wsctl(['executions', 'rerun', 'no-such-execution', ...on]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^error: [a-z_]+: /);

  t.match(await ok(t, ['definition', 'list', '--category', 'workflow', ...on]), / {2}greeter +workflow /);
  t.equal(await ok(t, ['definition', 'list', '--category', 'playground', ...on]), 'ID  ALIAS  CATEGORY  CREATED_AT\n');

  t.match(JSON.parse(await ok(t, ['api', 'openapi'])), { openapi: /^3\.1\./, paths: Object });
  t.match(JSON.parse(await ok(t, ['api', 'openrpc'])), { openrpc: String, methods: Array });
});

t.test('the bin: exit codes and streams of a real process', async (t) => {
  const [version, refused, usage] = await Promise.all([
    // A cache directory that cannot be made (Node's recursive mkdir spins forever under /proc):
    // the compile cache is left off and the command runs.
    bin(['--version'], '', { XDG_CACHE_HOME: '/proc/no-such-directory' }),
    bin(['orgs', 'get', 'no-such-org']),
    bin(['orgs', 'create']),
  ]);
  t.equal(version.code, 0, version.stderr);
  t.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  t.equal(refused.code, 1, 'a refusal exits 1');
  t.equal(refused.stdout, '');
  t.match(refused.stderr, /^error: not_found: [^\n]+\n$/);
  t.equal(usage.code, 2, 'a usage error exits 2');
  t.equal(usage.stderr, "error: invalid_arguments: missing required argument 'alias'\n");
});

t.test("wsctl started by a Node older than 24 runs itself under the project's Node 24", async (t) => {
  // The first `node` on PATH outside node_modules (the system's), when it is older than 24.
  const path = (process.env.PATH ?? '').split(':').filter((dir) => !dir.includes('node_modules'));
  const probe = spawnSync('node', ['-p', 'process.versions.node'], {
    env: { ...process.env, PATH: path.join(':') },
    encoding: 'utf8',
  });
  const major = Number(probe.stdout?.split('.')[0]);
  if (probe.status !== 0 || !(major < 24)) {
    t.pass(`no Node older than 24 on PATH (found ${probe.stdout?.trim() || 'none'}): nothing to check`);
    return;
  }
  const run = spawnSync('node', [CLI, '--version'], {
    env: { ...process.env, PATH: path.join(':') },
    encoding: 'utf8',
  });
  t.equal(run.status, 0, run.stderr);
  t.match(run.stdout, /^\d+\.\d+\.\d+\n$/);
});
