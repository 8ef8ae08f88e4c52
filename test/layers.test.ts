/**
 * The control plane's layers (docs/architecture.md, "Layers of the control plane"): every relative
 * import of a module under control-plane/ points to its own layer or one below. Read from the
 * sources, type-only imports included, so a layer cannot come to depend on one above it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import t from 'tap';

const ROOT = join(import.meta.dirname, '..', 'control-plane');

/** Each top-level entry of control-plane/ and its height: a module imports only its height or lower. */
const HEIGHT: Record<string, number> = {
  'main.ts': 7,
  'app.ts': 6,
  routes: 5,
  ws: 5,
  ops: 5,
  console: 5,
  plugins: 5,
  reference: 5,
  commands: 4,
  bodies: 4,
  'context.ts': 4,
  openapi: 3,
  access: 3,
  idempotency: 3,
  limits: 3,
  workflow: 3,
  scheduler: 3,
  events: 3,
  models: 3,
  audit: 3,
  'reply.ts': 3,
  'metrics.ts': 3,
  auth: 2,
  sql: 1,
  'base-context.ts': 1,
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The top-level entry of control-plane/ that `path` belongs to, or undefined outside it. */
function entryOf(path: string): string | undefined {
  const rel = relative(ROOT, path);
  if (rel.startsWith('..')) return undefined;
  return rel.split('/')[0];
}

t.test('every entry of control-plane/ has a layer', async (t) => {
  const entries = readdirSync(ROOT).filter((name) => !name.startsWith('.'));
  t.same(
    entries.filter((name) => HEIGHT[name] === undefined),
    [],
    'a new folder or module is placed in docs/architecture.md and here',
  );
});

t.test('imports point to the same layer or down', async (t) => {
  const upward: string[] = [];
  for (const file of sources(ROOT)) {
    const from = entryOf(file)!;
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom '(\.[^']+)'/gms)) {
      const to = entryOf(normalize(join(dirname(file), match[1]!)));
      if (to === undefined || to === from) continue;
      if ((HEIGHT[to] ?? 0) > (HEIGHT[from] ?? 0)) upward.push(`${relative(ROOT, file)} → ${match[1]}`);
    }
  }
  t.same(upward, [], 'no import points up');
});
