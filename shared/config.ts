import { resolve } from 'node:path';
import { z } from 'zod';
import { loadSecrets, type Secrets } from './secrets.ts';
import { s3SettingsFrom, type S3Settings } from './onnx/s3-settings.ts';
import { RUNNER_TIMING_DEFAULTS } from './runner-timings.ts';
import { DEFAULT_SESSION_GRAPH_BOUNDS } from './graph/session-graph-usage.ts';
import { DEFAULT_NODE_RUN_VALUE_BYTES } from './workflow/run-values.ts';
import { AddressExemptions } from './egress/addresses.ts';
import { EGRESS_DEFAULTS, parseOrgHosts, type EgressSettings } from './egress/policy.ts';
import { DEFAULT_SWEEP_NICE } from './retention/backend-priority.ts';

/** Everything a process is configured with. Only entry files call `loadConfig`. */
export interface Config {
  host: string;
  port: number;
  opsHost: string;
  opsPort: number;
  /** Unset: an embedded PostgreSQL is started under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPgPort: number;
  /** Shared buffers of the embedded server in MiB; 0: an eighth of the machine's memory, 128 MiB–2 GiB. */
  embeddedPgSharedBuffersMb: number;
  secrets: Secrets;
  oidc: { issuer: string; jwksUrl: string; audience: string };
  accessTokenSeconds: number;
  refreshTokenSeconds: number;
  logLevel: string;
  /** Abuse throttles per client address (control-plane/plugins/throttle.ts); 0 turns one off. */
  throttle: {
    /** Anonymous sign-ups per address per minute. */
    signupsPerMinute: number;
    /** Failed credential attempts (401 answers) per address per minute before its credentialed requests are refused for the rest of the minute. */
    authFailuresPerMinute: number;
    /** WebSocket connections open at once per address. */
    wsConnectionsPerAddress: number;
  };
  /**
   * Heavy requests (large bodies) in flight on this control plane (control-plane/plugins/heavy-work.ts);
   * 0 turns a bound off, `bodyBytes` 0 the whole gate.
   */
  heavyWork: {
    /** A body of at least this many bytes is heavy. */
    bodyBytes: number;
    /** Heavy requests one account may have in flight at once. */
    perAccount: number;
    /** Heavy requests one client address may have in flight at once. */
    perAddress: number;
    /** Bytes of heavy bodies in flight at once, all callers together. */
    bytesInFlight: number;
    /** Admitted heavy requests whose work (handler, database writes) runs at once, one per account, in turns. */
    atOnce: number;
    /** Threads that parse, check and prepare admitted heavy JSON bodies of the command route; 0: the event loop does. */
    threads: number;
  };
  /**
   * What one account may keep stored beyond the limits catalog (control-plane/limits/storage-bounds.ts);
   * 0 turns a bound off.
   */
  storage: {
    /** Stored idempotent answers (and their bytes) one account may hold at once. */
    idempotentAnswersPerAccount: number;
    idempotentBytesPerAccount: number;
    /** Records (and their bytes) one NLP dataset revision may hold. */
    nlpRecordsPerRevision: number;
    nlpBytesPerRevision: number;
    /** Elements (and their bytes) one graph blob revision may hold. */
    graphElementsPerRevision: number;
    graphBytesPerRevision: number;
    /** Elements (and their bytes) one session's graph may hold (shared/graph/session-graph-usage.ts). */
    graphElementsPerSession: number;
    graphBytesPerSession: number;
    /** Bytes of a node run's input and of its output kept whole in its ending event (shared/workflow/run-values.ts). */
    nodeRunValueBytes: number;
  };
  /** Webhooks in and out (docs/webhooks.md); 0 turns a bound off. */
  hooks: {
    /** Triggers, and event hooks, one session may hold. */
    triggersPerSession: number;
    eventHooksPerSession: number;
    /** Requests to one trigger, and to all the triggers of one organization, per minute (this control plane). */
    callsPerTrigger: number;
    callsPerOrg: number;
    /** Requests naming no trigger (404) one client address may make per minute before it is refused. */
    missesPerAddress: number;
    /** Deliveries one runner posts at once, and of them, for one organization. */
    deliveriesInFlight: number;
    deliveriesPerOrg: number;
    /** Seconds one delivery attempt may take, connection to last byte. */
    deliverySeconds: number;
  };
  /** Origins (scheme://host[:port]) a browser app may call the REST API from (CORS); none by default. */
  corsOrigins: string[];
  /** Where model bytes live: null for PostgreSQL large objects, else an S3-compatible bucket (`MODEL_STORE=s3`). */
  modelStore: S3Settings | null;
  /** Bounds of model uploads (control-plane/routes/models.ts, control-plane/models/). */
  models: {
    /** Seconds an upload's body may go without a byte before it is refused. */
    uploadIdleSeconds: number;
    /** Seconds an upload's whole body may take. */
    uploadSeconds: number;
    /** Nodes a model may hold, in all its graphs, subgraphs and functions. */
    maxNodes: number;
  };
  runner: {
    /** Executions one runner works on at once; 0 lets the engine choose. */
    concurrency: number;
    /** Lease of a claimed execution, and how often it is renewed (runner/engine/lease-keeper.ts). */
    leaseSeconds: number;
    renewSeconds: number;
    /** Recovery sweep period, and the grace before an unheld execution gets a new wake-up. */
    sweepSeconds: number;
    orphanSeconds: number;
    /** The nice value the runner raises its threads to (shared/priority.ts); 0 keeps the priority it started with. */
    nice: number;
    /** Whether runners on one host split its CPUs between them (runner/cpu-split.ts). */
    cpuSplit: boolean;
    /** Whose runs a `logic.code` context serves (sandbox/isolate-pool.ts, `contexts`). */
    codeContexts: 'shared' | 'tenant';
    /** Memory bound of each sandbox child process, MiB (sandbox/memory-bound.ts); 0 derives it from the isolates' heap bounds. */
    sandboxMemoryMb: number;
    /** Port of the runner's /metrics, /healthz and /readyz (0: none), and its interface. */
    metricsPort: number;
    metricsHost: string;
  };
  /** The retention sweep (docs/retention.md, "How it works"). */
  retention: {
    /**
     * Percent of a sweep's time spent in its statements; after each batch it pauses for the rest.
     * null (unset): 100 when the sweep's backend runs at a lower priority, 50 otherwise.
     */
    sweepDutyPercent: number | null;
    /** Nice value of the sweep's PostgreSQL backend when it runs on this host; 0 leaves it alone. */
    sweepNice: number;
  };
  /** OpenTelemetry tracing (shared/tracing/); null, the default, loads nothing of the SDK. */
  tracing: TracingSettings | null;
  /** The egress policy of outside calls (shared/egress/policy.ts; docs/sandbox.md, "Outside calls"). */
  egress: EgressSettings;
}

/** Where spans go when tracing is on (`OTEL_EXPORTER_OTLP_ENDPOINT` set). */
export interface TracingSettings {
  /** The OTLP/HTTP base URL; spans are posted to `<endpoint>/v1/traces`. */
  endpoint: string;
  /** `service.name` of the spans; null: each process names itself (`workspace-control-plane`, `workspace-runner`). */
  serviceName: string | null;
}

/** Every problem of the configuration, reported at once (entries print them and exit 2: `loadConfigOrExit`). */
export class ConfigError extends Error {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(
      `The configuration is invalid (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** pino's levels; the first is the default. */
const LOG_LEVELS = ['info', 'fatal', 'error', 'warn', 'debug', 'trace', 'silent'] as const;

/** An integer variable: unset or empty is `fallback`; otherwise within `min`..`max`. */
function intVar(name: string, fallback: number, range: { min?: number; max?: number } = {}) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw === '') return fallback;
      const value = Number(raw);
      if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value)) {
        ctx.addIssue({ code: 'custom', message: `${name} must be a non-negative integer, got ${raw}` });
        return z.NEVER;
      }
      if ((range.min !== undefined && value < range.min) || (range.max !== undefined && value > range.max)) {
        const bounds = range.max === undefined ? `at least ${range.min}` : `from ${range.min ?? 0} to ${range.max}`;
        ctx.addIssue({ code: 'custom', message: `${name} must be ${bounds}, got ${raw}` });
        return z.NEVER;
      }
      return value;
    });
}

/** One of `values`; unset or empty is the first. */
function oneOfVar<T extends string>(name: string, values: readonly [T, ...T[]]) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw === '') return values[0];
      if (!(values as readonly string[]).includes(raw)) {
        ctx.addIssue({ code: 'custom', message: `${name} must be one of ${values.join(', ')}, got ${raw}` });
        return z.NEVER;
      }
      return raw as T;
    });
}

/**
 * The least SANDBOX_MEMORY_MB: one heap bound per isolate a sandbox child may hold (8 × 64 MiB at
 * the runner's defaults) plus the 256 MiB margin of sandbox/memory-bound.ts.
 */
const MIN_SANDBOX_MEMORY_MB = 768;

const port = (name: string, fallback: number) => intVar(name, fallback, { max: 65_535 });

/** Every variable the processes read (the README's table; docs/configuration.md), in one schema. */
const envSchema = z
  .object({
    HOST: z.string().optional(),
    PORT: port('PORT', 8080),
    OPS_HOST: z.string().optional(),
    OPS_PORT: port('OPS_PORT', 8081),
    DATABASE_URL: z.string().optional(),
    DATA_DIR: z.string().optional(),
    EMBEDDED_PG_PORT: port('EMBEDDED_PG_PORT', 54329),
    EMBEDDED_PG_SHARED_BUFFERS_MB: intVar('EMBEDDED_PG_SHARED_BUFFERS_MB', 0, { max: 1_048_576 }),
    OIDC_ISSUER: z.string().optional(),
    OIDC_JWKS_URL: z.string().optional(),
    OIDC_AUDIENCE: z.string().optional(),
    ACCESS_TOKEN_SECONDS: intVar('ACCESS_TOKEN_SECONDS', 900),
    REFRESH_TOKEN_SECONDS: intVar('REFRESH_TOKEN_SECONDS', 30 * 24 * 3600),
    LOG_LEVEL: oneOfVar('LOG_LEVEL', LOG_LEVELS),
    SIGNUPS_PER_MINUTE: intVar('SIGNUPS_PER_MINUTE', 20),
    AUTH_FAILURES_PER_MINUTE: intVar('AUTH_FAILURES_PER_MINUTE', 100),
    WS_CONNECTIONS_PER_ADDRESS: intVar('WS_CONNECTIONS_PER_ADDRESS', 200),
    MODEL_UPLOAD_IDLE_SECONDS: intVar('MODEL_UPLOAD_IDLE_SECONDS', 30, { min: 1, max: 3600 }),
    MODEL_UPLOAD_SECONDS: intVar('MODEL_UPLOAD_SECONDS', 3600, { min: 1 }),
    MODEL_MAX_NODES: intVar('MODEL_MAX_NODES', 50_000, { min: 1 }),
    HEAVY_BODY_BYTES: intVar('HEAVY_BODY_BYTES', 256 * 1024),
    HEAVY_REQUESTS_PER_ACCOUNT: intVar('HEAVY_REQUESTS_PER_ACCOUNT', 2),
    HEAVY_REQUESTS_PER_ADDRESS: intVar('HEAVY_REQUESTS_PER_ADDRESS', 4),
    HEAVY_BYTES_IN_FLIGHT: intVar('HEAVY_BYTES_IN_FLIGHT', 64 * 1024 * 1024),
    HEAVY_REQUESTS_AT_ONCE: intVar('HEAVY_REQUESTS_AT_ONCE', 1),
    HEAVY_BODY_THREADS: intVar('HEAVY_BODY_THREADS', 1, { max: 16 }),
    IDEMPOTENT_ANSWERS_PER_ACCOUNT: intVar('IDEMPOTENT_ANSWERS_PER_ACCOUNT', 10_000),
    IDEMPOTENT_BYTES_PER_ACCOUNT: intVar('IDEMPOTENT_BYTES_PER_ACCOUNT', 64 * 1024 * 1024),
    NLP_RECORDS_PER_REVISION: intVar('NLP_RECORDS_PER_REVISION', 100_000),
    NLP_BYTES_PER_REVISION: intVar('NLP_BYTES_PER_REVISION', 64 * 1024 * 1024),
    GRAPH_ELEMENTS_PER_REVISION: intVar('GRAPH_ELEMENTS_PER_REVISION', 100_000),
    GRAPH_BYTES_PER_REVISION: intVar('GRAPH_BYTES_PER_REVISION', 64 * 1024 * 1024),
    GRAPH_ELEMENTS_PER_SESSION: intVar('GRAPH_ELEMENTS_PER_SESSION', DEFAULT_SESSION_GRAPH_BOUNDS.elements),
    GRAPH_BYTES_PER_SESSION: intVar('GRAPH_BYTES_PER_SESSION', DEFAULT_SESSION_GRAPH_BOUNDS.bytes),
    NODE_RUN_VALUE_BYTES: intVar('NODE_RUN_VALUE_BYTES', DEFAULT_NODE_RUN_VALUE_BYTES, { max: 1_048_576 }),
    TRIGGERS_PER_SESSION: intVar('TRIGGERS_PER_SESSION', 10),
    EVENT_HOOKS_PER_SESSION: intVar('EVENT_HOOKS_PER_SESSION', 10),
    HOOK_CALLS_PER_TRIGGER_PER_MINUTE: intVar('HOOK_CALLS_PER_TRIGGER_PER_MINUTE', 120),
    HOOK_CALLS_PER_ORG_PER_MINUTE: intVar('HOOK_CALLS_PER_ORG_PER_MINUTE', 600),
    HOOK_MISSES_PER_ADDRESS_PER_MINUTE: intVar('HOOK_MISSES_PER_ADDRESS_PER_MINUTE', 60),
    HOOK_DELIVERIES_IN_FLIGHT: intVar('HOOK_DELIVERIES_IN_FLIGHT', 32, { min: 1, max: 1024 }),
    HOOK_DELIVERIES_PER_ORG: intVar('HOOK_DELIVERIES_PER_ORG', 4, { min: 1, max: 1024 }),
    HOOK_DELIVERY_SECONDS: intVar('HOOK_DELIVERY_SECONDS', 10, { min: 1, max: 300 }),
    RUNNER_CONCURRENCY: intVar('RUNNER_CONCURRENCY', 0),
    RUNNER_LEASE_SECONDS: intVar('RUNNER_LEASE_SECONDS', RUNNER_TIMING_DEFAULTS.leaseSeconds),
    RUNNER_RENEW_SECONDS: intVar('RUNNER_RENEW_SECONDS', RUNNER_TIMING_DEFAULTS.renewSeconds),
    RUNNER_SWEEP_SECONDS: intVar('RUNNER_SWEEP_SECONDS', RUNNER_TIMING_DEFAULTS.sweepSeconds),
    RUNNER_ORPHAN_SECONDS: intVar('RUNNER_ORPHAN_SECONDS', RUNNER_TIMING_DEFAULTS.orphanSeconds),
    RUNNER_NICE: intVar('RUNNER_NICE', 10, { max: 19 }),
    RETENTION_SWEEP_DUTY_PERCENT: intVar('RETENTION_SWEEP_DUTY_PERCENT', 0, { min: 1, max: 100 }),
    RETENTION_SWEEP_NICE: intVar('RETENTION_SWEEP_NICE', DEFAULT_SWEEP_NICE, { max: 19 }),
    RUNNER_CPU_SPLIT: oneOfVar('RUNNER_CPU_SPLIT', ['auto', 'off']),
    RUNNER_CODE_CONTEXTS: oneOfVar('RUNNER_CODE_CONTEXTS', ['shared', 'organization']),
    SANDBOX_MEMORY_MB: intVar('SANDBOX_MEMORY_MB', 0),
    METRICS_PORT: port('METRICS_PORT', 0),
    METRICS_HOST: z.string().optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: z
      .string()
      .optional()
      .transform((raw, ctx) => {
        if (raw === undefined || raw.trim() === '') return null;
        let url: URL | undefined;
        try {
          url = new URL(raw.trim());
        } catch {
          url = undefined;
        }
        if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
          ctx.addIssue({
            code: 'custom',
            message: `OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (an OTLP/HTTP collector), got ${raw}`,
          });
          return z.NEVER;
        }
        return raw.trim();
      }),
    OTEL_SERVICE_NAME: z.string().optional(),
    EGRESS_ALLOW_ADDRESSES: z
      .string()
      .optional()
      .transform((raw, ctx) => {
        const ranges = (raw ?? '')
          .split(',')
          .map((r) => r.trim())
          .filter((r) => r !== '');
        try {
          new AddressExemptions(ranges);
        } catch (error) {
          ctx.addIssue({
            code: 'custom',
            message: `EGRESS_ALLOW_ADDRESSES must list addresses or CIDR ranges (127.0.0.1/32, fd12::/64): ${(error as Error).message}`,
          });
          return z.NEVER;
        }
        return ranges;
      }),
    EGRESS_ORG_HOSTS: z
      .string()
      .optional()
      .transform((raw, ctx) => {
        try {
          return parseOrgHosts(raw ?? '');
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: `EGRESS_ORG_HOSTS: ${(error as Error).message}` });
          return z.NEVER;
        }
      }),
    EGRESS_CALLS_PER_ORG: intVar('EGRESS_CALLS_PER_ORG', EGRESS_DEFAULTS.callsPerOrg, { min: 1, max: 10_000 }),
    EGRESS_CALLS_PER_THREAD: intVar('EGRESS_CALLS_PER_THREAD', EGRESS_DEFAULTS.callsPerThread, {
      min: 1,
      max: 100_000,
    }),
    EGRESS_RESPONSE_BYTES: intVar('EGRESS_RESPONSE_BYTES', EGRESS_DEFAULTS.maxResponseBytes, {
      min: 1,
      max: 256 * 1024 * 1024,
    }),
    EGRESS_TIMEOUT_SECONDS: intVar('EGRESS_TIMEOUT_SECONDS', EGRESS_DEFAULTS.maxTimeoutSeconds, {
      min: 1,
      max: 3600,
    }),
    CORS_ORIGINS: z
      .string()
      .optional()
      .transform((raw, ctx) => {
        const origins = (raw ?? '')
          .split(',')
          .map((o) => o.trim())
          .filter((o) => o !== '');
        for (const origin of origins) {
          let ok: boolean;
          try {
            ok = new URL(origin).origin === origin;
          } catch {
            ok = false;
          }
          if (!ok)
            ctx.addIssue({
              code: 'custom',
              message: `CORS_ORIGINS must list origins like https://app.example.com (scheme, host, port; no path), got ${origin}`,
            });
        }
        return origins;
      }),
  })
  .superRefine((env, ctx) => {
    if (env.RUNNER_RENEW_SECONDS < 1 || env.RUNNER_RENEW_SECONDS >= env.RUNNER_LEASE_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        message: `RUNNER_RENEW_SECONDS must be at least 1 and less than RUNNER_LEASE_SECONDS (${env.RUNNER_LEASE_SECONDS}), got ${env.RUNNER_RENEW_SECONDS}`,
      });
    }
    // Below one heap bound per isolate plus the margin, code within its heap bounds would get
    // its child killed.
    if (env.SANDBOX_MEMORY_MB !== 0 && env.SANDBOX_MEMORY_MB < MIN_SANDBOX_MEMORY_MB)
      ctx.addIssue({
        code: 'custom',
        message: `SANDBOX_MEMORY_MB must be 0 (derived from the isolates' heap bounds) or at least ${MIN_SANDBOX_MEMORY_MB}, got ${env.SANDBOX_MEMORY_MB}`,
      });
    if (env.EGRESS_CALLS_PER_THREAD < env.EGRESS_CALLS_PER_ORG)
      ctx.addIssue({
        code: 'custom',
        message: `EGRESS_CALLS_PER_THREAD must be at least EGRESS_CALLS_PER_ORG (${env.EGRESS_CALLS_PER_ORG}), got ${env.EGRESS_CALLS_PER_THREAD}`,
      });
    if (env.HOOK_DELIVERIES_IN_FLIGHT < env.HOOK_DELIVERIES_PER_ORG)
      ctx.addIssue({
        code: 'custom',
        message: `HOOK_DELIVERIES_IN_FLIGHT must be at least HOOK_DELIVERIES_PER_ORG (${env.HOOK_DELIVERIES_PER_ORG}), got ${env.HOOK_DELIVERIES_IN_FLIGHT}`,
      });
    if (env.RUNNER_SWEEP_SECONDS < 1)
      ctx.addIssue({
        code: 'custom',
        message: `RUNNER_SWEEP_SECONDS must be at least 1, got ${env.RUNNER_SWEEP_SECONDS}`,
      });
  });

/** Reads the configuration table of the README from `env`; throws a ConfigError naming every problem. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const problems: string[] = [];
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) problems.push(...parsed.error.issues.map((issue) => issue.message));
  const dataDir = resolve(env.DATA_DIR ?? '.data');
  const attempt = <T>(read: () => T): T | undefined => {
    try {
      return read();
    } catch (error) {
      problems.push((error as Error).message);
      return undefined;
    }
  };
  const modelStore = attempt(() => s3SettingsFrom(env));
  // Secrets last: generating secrets.json for a configuration that is wrong anyway helps nobody.
  const secrets = problems.length === 0 ? attempt(() => loadSecrets(env, dataDir)) : undefined;
  if (problems.length > 0 || !parsed.success || secrets === undefined || modelStore === undefined)
    throw new ConfigError(problems);
  const v = parsed.data;
  return {
    host: v.HOST ?? '127.0.0.1',
    port: v.PORT,
    opsHost: v.OPS_HOST ?? '127.0.0.1',
    opsPort: v.OPS_PORT,
    databaseUrl: v.DATABASE_URL || undefined,
    dataDir,
    embeddedPgPort: v.EMBEDDED_PG_PORT,
    embeddedPgSharedBuffersMb: v.EMBEDDED_PG_SHARED_BUFFERS_MB,
    secrets,
    oidc: {
      issuer: v.OIDC_ISSUER ?? 'https://accounts.google.com',
      jwksUrl: v.OIDC_JWKS_URL ?? 'https://www.googleapis.com/oauth2/v3/certs',
      audience: v.OIDC_AUDIENCE ?? '',
    },
    accessTokenSeconds: v.ACCESS_TOKEN_SECONDS,
    refreshTokenSeconds: v.REFRESH_TOKEN_SECONDS,
    logLevel: v.LOG_LEVEL,
    throttle: {
      signupsPerMinute: v.SIGNUPS_PER_MINUTE,
      authFailuresPerMinute: v.AUTH_FAILURES_PER_MINUTE,
      wsConnectionsPerAddress: v.WS_CONNECTIONS_PER_ADDRESS,
    },
    heavyWork: {
      bodyBytes: v.HEAVY_BODY_BYTES,
      perAccount: v.HEAVY_REQUESTS_PER_ACCOUNT,
      perAddress: v.HEAVY_REQUESTS_PER_ADDRESS,
      bytesInFlight: v.HEAVY_BYTES_IN_FLIGHT,
      atOnce: v.HEAVY_REQUESTS_AT_ONCE,
      threads: v.HEAVY_BODY_THREADS,
    },
    storage: {
      idempotentAnswersPerAccount: v.IDEMPOTENT_ANSWERS_PER_ACCOUNT,
      idempotentBytesPerAccount: v.IDEMPOTENT_BYTES_PER_ACCOUNT,
      nlpRecordsPerRevision: v.NLP_RECORDS_PER_REVISION,
      nlpBytesPerRevision: v.NLP_BYTES_PER_REVISION,
      graphElementsPerRevision: v.GRAPH_ELEMENTS_PER_REVISION,
      graphBytesPerRevision: v.GRAPH_BYTES_PER_REVISION,
      graphElementsPerSession: v.GRAPH_ELEMENTS_PER_SESSION,
      graphBytesPerSession: v.GRAPH_BYTES_PER_SESSION,
      nodeRunValueBytes: v.NODE_RUN_VALUE_BYTES,
    },
    hooks: {
      triggersPerSession: v.TRIGGERS_PER_SESSION,
      eventHooksPerSession: v.EVENT_HOOKS_PER_SESSION,
      callsPerTrigger: v.HOOK_CALLS_PER_TRIGGER_PER_MINUTE,
      callsPerOrg: v.HOOK_CALLS_PER_ORG_PER_MINUTE,
      missesPerAddress: v.HOOK_MISSES_PER_ADDRESS_PER_MINUTE,
      deliveriesInFlight: v.HOOK_DELIVERIES_IN_FLIGHT,
      deliveriesPerOrg: v.HOOK_DELIVERIES_PER_ORG,
      deliverySeconds: v.HOOK_DELIVERY_SECONDS,
    },
    corsOrigins: v.CORS_ORIGINS,
    modelStore,
    models: {
      uploadIdleSeconds: v.MODEL_UPLOAD_IDLE_SECONDS,
      uploadSeconds: v.MODEL_UPLOAD_SECONDS,
      maxNodes: v.MODEL_MAX_NODES,
    },
    runner: {
      concurrency: v.RUNNER_CONCURRENCY,
      leaseSeconds: v.RUNNER_LEASE_SECONDS,
      renewSeconds: v.RUNNER_RENEW_SECONDS,
      sweepSeconds: v.RUNNER_SWEEP_SECONDS,
      orphanSeconds: v.RUNNER_ORPHAN_SECONDS,
      nice: v.RUNNER_NICE,
      cpuSplit: v.RUNNER_CPU_SPLIT === 'auto',
      codeContexts: v.RUNNER_CODE_CONTEXTS === 'organization' ? 'tenant' : 'shared',
      sandboxMemoryMb: v.SANDBOX_MEMORY_MB,
      metricsPort: v.METRICS_PORT,
      metricsHost: v.METRICS_HOST ?? '127.0.0.1',
    },
    retention: {
      sweepDutyPercent: v.RETENTION_SWEEP_DUTY_PERCENT === 0 ? null : v.RETENTION_SWEEP_DUTY_PERCENT,
      sweepNice: v.RETENTION_SWEEP_NICE,
    },
    tracing:
      v.OTEL_EXPORTER_OTLP_ENDPOINT === null
        ? null
        : { endpoint: v.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: v.OTEL_SERVICE_NAME?.trim() || null },
    egress: {
      allowAddresses: v.EGRESS_ALLOW_ADDRESSES,
      orgHosts: v.EGRESS_ORG_HOSTS,
      callsPerOrg: v.EGRESS_CALLS_PER_ORG,
      callsPerThread: v.EGRESS_CALLS_PER_THREAD,
      maxResponseBytes: v.EGRESS_RESPONSE_BYTES,
      maxTimeoutSeconds: v.EGRESS_TIMEOUT_SECONDS,
    },
  };
}

/**
 * For entry files: the configuration, or every problem of it printed as one block on stderr and
 * exit code 2 (no stack trace: nothing is wrong with the program).
 */
export function loadConfigOrExit(env: Record<string, string | undefined> = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\nSee docs/configuration.md.\n`);
    process.exit(2);
  }
}
