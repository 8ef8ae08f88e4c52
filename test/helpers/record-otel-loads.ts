/**
 * Preloaded with `--import` into a process under test (test/tracing.test.ts): appends the URL of
 * every OpenTelemetry module, and every module of shared/tracing/, that the process (or one of its
 * worker threads, which inherit the flag) loads, by `import` or `require`, to the file named by
 * OTEL_LOADS_FILE, so a test can tell whether tracing left the SDK unloaded.
 */
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.OTEL_LOADS_FILE;
// OpenTelemetry's packages, and the service's own tracing modules (some only ever load in an engine worker thread).
const OTEL = /\/node_modules\/(@opentelemetry|@fastify\/otel)\/|\/shared\/tracing\//;

if (file) {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      if (OTEL.test(resolved.url)) appendFileSync(file, `${resolved.url}\n`);
      return resolved;
    },
  });
}
