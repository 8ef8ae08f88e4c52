/**
 * Configuration (docs/configuration.md): one schema for every variable, every problem reported
 * at once; entries print them as one block and exit 2 without a stack trace; `npm run config`
 * prints the resolved configuration with secrets masked.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig } from '../shared/config.ts';

const SECRETS = {
  TOKEN_SIGNING_KEY: 'test-signing-key-0123456789abcdef0123456789',
  CURSOR_KEY: 'test-cursor-key-0123456789abcdef0123456789',
  CREDENTIAL_KEY: 'test-credential-key-0123456789abcdef01234567',
  OPS_TOKEN: 'test-ops-token',
};
const root = join(import.meta.dirname, '..');

t.test('every problem at once, each naming its variable', async (t) => {
  const error = t.throws(() =>
    loadConfig({
      ...SECRETS,
      PORT: '70000',
      LOG_LEVEL: 'verbose',
      OPS_PORT: 'eighty',
      MODEL_STORE: 's4',
      RUNNER_NICE: '-1',
    }),
  ) as unknown as ConfigError;
  t.ok(error instanceof ConfigError);
  t.same(error.problems.sort(), [
    'LOG_LEVEL must be one of info, fatal, error, warn, debug, trace, silent, got verbose',
    'MODEL_STORE must be postgres or s3, got s4',
    'OPS_PORT must be a non-negative integer, got eighty',
    'PORT must be from 0 to 65535, got 70000',
    'RUNNER_NICE must be a non-negative integer, got -1',
  ]);
  t.match(error.message, /^The configuration is invalid \(5 problems\):\n {2}- /);
  t.equal(loadConfig({ ...SECRETS, LOG_LEVEL: 'debug', PORT: '' }).port, 8080, 'an empty variable is unset');
});

t.test("retention: the sweep duty cycle, a percentage from 1 to 100, and its backend's nice value", async (t) => {
  t.same(loadConfig({ ...SECRETS }).retention, { sweepDutyPercent: null, sweepNice: 10 }, 'unset: decided per sweep');
  t.equal(loadConfig({ ...SECRETS, RETENTION_SWEEP_NICE: '0' }).retention.sweepNice, 0);
  t.equal(loadConfig({ ...SECRETS, RETENTION_SWEEP_NICE: '19' }).retention.sweepNice, 19);
  const nice = t.throws(() => loadConfig({ ...SECRETS, RETENTION_SWEEP_NICE: '20' })) as unknown as ConfigError;
  t.same(nice.problems, ['RETENTION_SWEEP_NICE must be from 0 to 19, got 20']);
  t.equal(loadConfig({ ...SECRETS, RETENTION_SWEEP_DUTY_PERCENT: '100' }).retention.sweepDutyPercent, 100);
  for (const value of ['0', '101']) {
    const error = t.throws(() =>
      loadConfig({ ...SECRETS, RETENTION_SWEEP_DUTY_PERCENT: value }),
    ) as unknown as ConfigError;
    t.same(error.problems, [`RETENTION_SWEEP_DUTY_PERCENT must be from 1 to 100, got ${value}`]);
  }
});

t.test('egress: defaults, and the grammar of addresses and allow-lists', async (t) => {
  t.same(loadConfig({ ...SECRETS }).egress, {
    allowAddresses: [],
    orgHosts: {},
    callsPerOrg: 8,
    callsPerThread: 64,
    maxResponseBytes: 4 * 1024 * 1024,
    maxTimeoutSeconds: 30,
  });
  const org = '11111111-1111-4111-8111-111111111111';
  const egress = loadConfig({
    ...SECRETS,
    EGRESS_ALLOW_ADDRESSES: '127.0.0.1/32, fd12::/64',
    EGRESS_ORG_HOSTS: `${org}=api.example.com,*.example.org`,
  }).egress;
  t.same(egress.allowAddresses, ['127.0.0.1/32', 'fd12::/64']);
  t.same(egress.orgHosts, { [org]: ['api.example.com', '*.example.org'] });
  const error = t.throws(() =>
    loadConfig({
      ...SECRETS,
      EGRESS_ALLOW_ADDRESSES: '10.0.0.0/33',
      EGRESS_ORG_HOSTS: 'acme=x',
    }),
  ) as unknown as ConfigError;
  t.same(error.problems.sort(), [
    'EGRESS_ALLOW_ADDRESSES must list addresses or CIDR ranges (127.0.0.1/32, fd12::/64): not an address or CIDR range: 10.0.0.0/33',
    'EGRESS_ORG_HOSTS: expected <organization id>=<host>[,<host>…], got acme=x',
  ]);
  const bounds = t.throws(() =>
    loadConfig({ ...SECRETS, EGRESS_CALLS_PER_ORG: '10', EGRESS_CALLS_PER_THREAD: '5' }),
  ) as unknown as ConfigError;
  t.same(bounds.problems, ['EGRESS_CALLS_PER_THREAD must be at least EGRESS_CALLS_PER_ORG (10), got 5']);
});

t.test("webhooks: defaults, and one organization's deliveries within the runner's", async (t) => {
  t.same(loadConfig({ ...SECRETS }).hooks, {
    triggersPerSession: 10,
    eventHooksPerSession: 10,
    callsPerTrigger: 120,
    callsPerOrg: 600,
    missesPerAddress: 60,
    deliveriesInFlight: 32,
    deliveriesPerOrg: 4,
    deliverySeconds: 10,
  });
  const bounds = t.throws(() =>
    loadConfig({ ...SECRETS, HOOK_DELIVERIES_IN_FLIGHT: '2', HOOK_DELIVERIES_PER_ORG: '3' }),
  ) as unknown as ConfigError;
  t.same(bounds.problems, ['HOOK_DELIVERIES_IN_FLIGHT must be at least HOOK_DELIVERIES_PER_ORG (3), got 2']);
  const seconds = t.throws(() => loadConfig({ ...SECRETS, HOOK_DELIVERY_SECONDS: '0' })) as unknown as ConfigError;
  t.same(seconds.problems, ['HOOK_DELIVERY_SECONDS must be from 1 to 300, got 0']);
});

t.test('heavy bodies: one body thread by default, at most 16', async (t) => {
  t.equal(loadConfig({ ...SECRETS }).heavyWork.threads, 1);
  t.equal(loadConfig({ ...SECRETS, HEAVY_BODY_THREADS: '0' }).heavyWork.threads, 0);
  const error = t.throws(() => loadConfig({ ...SECRETS, HEAVY_BODY_THREADS: '17' })) as unknown as ConfigError;
  t.same(error.problems, ['HEAVY_BODY_THREADS must be from 0 to 16, got 17']);
});

t.test('tracing: off unless OTEL_EXPORTER_OTLP_ENDPOINT is set, and then an http(s) URL', async (t) => {
  t.equal(loadConfig({ ...SECRETS }).tracing, null, 'unset: off');
  t.equal(
    loadConfig({ ...SECRETS, OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_SERVICE_NAME: 'x' }).tracing,
    null,
    'empty: off, whatever else is set',
  );
  t.same(loadConfig({ ...SECRETS, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing, {
    endpoint: 'http://collector:4318',
    serviceName: null,
  });
  t.same(
    loadConfig({ ...SECRETS, OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com/', OTEL_SERVICE_NAME: 'ws-eu' })
      .tracing,
    { endpoint: 'https://otlp.example.com/', serviceName: 'ws-eu' },
  );
  for (const bad of ['collector:4318', 'grpc://collector:4317', 'not a url']) {
    const error = t.throws(() =>
      loadConfig({ ...SECRETS, OTEL_EXPORTER_OTLP_ENDPOINT: bad }),
    ) as unknown as ConfigError;
    t.same(error.problems, [
      `OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (an OTLP/HTTP collector), got ${bad}`,
    ]);
  }
});

t.test('an entry with a bad configuration prints one block and exits 2, without a stack trace', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'ws-config-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  for (const entry of ['control-plane/main.ts', 'runner/main.ts']) {
    const run = spawnSync(process.execPath, ['--no-node-snapshot', join(root, entry)], {
      env: {
        ...process.env,
        ...SECRETS,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'verbose',
        METRICS_PORT: '99999',
        DATABASE_URL: 'postgres://x@127.0.0.1:1/none',
      },
      encoding: 'utf8',
    });
    t.equal(run.status, 2, `${entry} exit code`);
    t.match(
      run.stderr,
      /The configuration is invalid \(2 problems\):\n {2}- LOG_LEVEL must be one of .*verbose\n {2}- METRICS_PORT must be from 0 to 65535, got 99999\n/,
    );
    t.notMatch(run.stderr, /\n\s+at /, 'no stack trace');
  }
});

t.test('npm run config prints the resolved configuration with secrets masked', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'ws-config-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const run = spawnSync(process.execPath, [join(root, 'scripts/config.ts')], {
    env: {
      ...process.env,
      ...SECRETS,
      DATA_DIR: dataDir,
      DATABASE_URL: 'postgres://app:hunter2@db:5432/workspace',
      PORT: '9090',
    },
    encoding: 'utf8',
  });
  t.equal(run.status, 0, run.stderr);
  const printed = JSON.parse(run.stdout);
  t.equal(printed.port, 9090);
  t.equal(printed.databaseUrl, 'postgres://app:***@db:5432/workspace');
  t.equal(printed.secretsFile, join(dataDir, 'secrets.json'), 'the secrets file is named, under DATA_DIR');
  t.same(printed.secrets, {
    TOKEN_SIGNING_KEY: '(set in the environment)',
    CURSOR_KEY: '(set in the environment)',
    CREDENTIAL_KEY: '(set in the environment)',
    OPS_TOKEN: '(set in the environment)',
  });
  for (const secret of [...Object.values(SECRETS), 'hunter2'])
    t.notOk(run.stdout.includes(secret), 'no secret value is printed');
});
