import t from 'tap';
import { loadConfig } from '../../shared/config.ts';

const SECRETS = {
  TOKEN_SIGNING_KEY: 'test-signing-key-0123456789abcdef0123456789',
  CURSOR_KEY: 'test-cursor-key-0123456789abcdef0123456789',
  CREDENTIAL_KEY: 'test-credential-key-0123456789abcdef01234567',
  OPS_TOKEN: 'test-ops-token',
};

t.test(
  "the runner engine's timings: defaults, environment, and a lease always renewed before it runs out",
  async (t) => {
    t.same(loadConfig({ ...SECRETS }).runner, {
      concurrency: 0,
      leaseSeconds: 10,
      renewSeconds: 3,
      sweepSeconds: 5,
      orphanSeconds: 30,
      nice: 10,
      cpuSplit: true,
      codeContexts: 'shared',
      sandboxMemoryMb: 0,
      metricsPort: 0,
      metricsHost: '127.0.0.1',
    });
    t.same(
      loadConfig({
        ...SECRETS,
        RUNNER_CONCURRENCY: '8',
        RUNNER_LEASE_SECONDS: '3',
        RUNNER_RENEW_SECONDS: '1',
        RUNNER_SWEEP_SECONDS: '2',
        RUNNER_ORPHAN_SECONDS: '5',
        RUNNER_NICE: '0',
        RUNNER_CPU_SPLIT: 'off',
        RUNNER_CODE_CONTEXTS: 'organization',
        SANDBOX_MEMORY_MB: '2048',
        METRICS_PORT: '9464',
        METRICS_HOST: '0.0.0.0',
      }).runner,
      {
        concurrency: 8,
        leaseSeconds: 3,
        renewSeconds: 1,
        sweepSeconds: 2,
        orphanSeconds: 5,
        nice: 0,
        cpuSplit: false,
        codeContexts: 'tenant',
        sandboxMemoryMb: 2048,
        metricsPort: 9464,
        metricsHost: '0.0.0.0',
      },
    );
    t.throws(() => loadConfig({ ...SECRETS, METRICS_PORT: '70000' }), /METRICS_PORT must be from 0 to 65535/);
    t.throws(
      () => loadConfig({ ...SECRETS, RUNNER_LEASE_SECONDS: '3', RUNNER_RENEW_SECONDS: '3' }),
      /RUNNER_RENEW_SECONDS must be at least 1 and less than RUNNER_LEASE_SECONDS/,
    );
    t.throws(() => loadConfig({ ...SECRETS, RUNNER_RENEW_SECONDS: '0' }), /RUNNER_RENEW_SECONDS/);
    t.throws(() => loadConfig({ ...SECRETS, RUNNER_SWEEP_SECONDS: '0' }), /RUNNER_SWEEP_SECONDS must be at least 1/);
    t.throws(
      () => loadConfig({ ...SECRETS, RUNNER_LEASE_SECONDS: 'soon' }),
      /RUNNER_LEASE_SECONDS must be a non-negative integer/,
    );
    t.throws(
      () => loadConfig({ ...SECRETS, SANDBOX_MEMORY_MB: '512' }),
      /SANDBOX_MEMORY_MB must be 0 \(derived from the isolates' heap bounds\) or at least 768, got 512/,
    );
    t.equal(loadConfig({ ...SECRETS, SANDBOX_MEMORY_MB: '768' }).runner.sandboxMemoryMb, 768);
    t.equal(loadConfig({ ...SECRETS, RUNNER_NICE: '19' }).runner.nice, 19);
    t.throws(() => loadConfig({ ...SECRETS, RUNNER_NICE: '20' }), /RUNNER_NICE must be from 0 to 19/);
    t.throws(() => loadConfig({ ...SECRETS, RUNNER_NICE: '-5' }), /RUNNER_NICE must be a non-negative integer/);
    t.equal(loadConfig({ ...SECRETS, RUNNER_CPU_SPLIT: 'auto' }).runner.cpuSplit, true);
    t.throws(
      () => loadConfig({ ...SECRETS, RUNNER_CPU_SPLIT: 'on' }),
      /RUNNER_CPU_SPLIT must be one of auto, off, got on/,
    );
  },
);
