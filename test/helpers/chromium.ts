/**
 * The browser test/browser.test.ts drives: `CHROMIUM_PATH` when set, else a system Chromium, else
 * the headless Chromium shipped inside the `@sparticuz/chromium` devDependency, so `npm test`
 * needs nothing but Node and npm (Chromium's own download is not used).
 */
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where a system Chromium is looked for when `CHROMIUM_PATH` names none. */
const SYSTEM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * Flags of the package's `args` (tuned for a one-page serverless function) left out: the first two
 * turn off the same-origin policy the test checks (a cross-origin page calling the API is only
 * meaningful with CORS enforced); in one process (`--single-process`) closing a page's context
 * takes the whole browser down, and the tests open a page per subtest.
 */
const LEFT_OUT = new Set(['--disable-web-security', '--allow-running-insecure-content', '--single-process']);

export interface Browser {
  /** What launches: a path for playwright-core's `executablePath`. */
  executablePath: string;
  /** Its flags, for playwright-core's `args`. */
  args: string[];
  /** Where it came from, for the test's log. */
  source: 'CHROMIUM_PATH' | 'system' | '@sparticuz/chromium';
}

async function executable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}

/**
 * The browser to launch. `CHROMIUM_PATH` must name an executable when set; otherwise the first
 * system Chromium found, else the npm package's, unpacked once per checkout into
 * `node_modules/.cache/` (≈ 200 MiB, tens of seconds the first time: `npm test` does it before
 * the test files start, so no file's time limit pays for it).
 */
export async function findChromium(): Promise<Browser> {
  const named = process.env.CHROMIUM_PATH;
  if (named) {
    if (!(await executable(named))) throw new Error(`CHROMIUM_PATH=${named} is not an executable`);
    return { executablePath: named, args: ['--no-sandbox'], source: 'CHROMIUM_PATH' };
  }
  for (const path of SYSTEM_PATHS) {
    if (await executable(path)) return { executablePath: path, args: ['--no-sandbox'], source: 'system' };
  }
  return packaged();
}

/**
 * `@sparticuz/chromium`'s browser. Its `executablePath()` unpacks into `os.tmpdir()` and takes any
 * `chromium` file already there as done, so a half-written one (a run killed while unpacking, or
 * another checkout's run unpacking at the same time) would be launched as is. Here it unpacks
 * into a fresh directory of its own, renamed into place only when complete.
 */
async function packaged(): Promise<Browser> {
  // The package exports no package.json: it is read from beside the module's directory.
  const main = fileURLToPath(import.meta.resolve('@sparticuz/chromium'));
  const { version } = JSON.parse(await readFile(join(dirname(main), '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const { default: chromium } = await import('@sparticuz/chromium');
  const cache = join(ROOT, 'node_modules', '.cache');
  const dir = join(cache, `sparticuz-chromium-${version}`);
  const binary = join(dir, 'chromium');
  if (!(await executable(binary))) {
    await mkdir(cache, { recursive: true });
    const staging = await mkdtemp(join(cache, 'sparticuz-chromium-unpacking-'));
    const tmpdir = process.env.TMPDIR;
    // executablePath() unpacks into os.tmpdir(), which reads TMPDIR at each call.
    process.env.TMPDIR = staging;
    try {
      await chromium.executablePath();
    } finally {
      if (tmpdir === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpdir;
    }
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another run finished first: keep its copy.
      await rm(staging, { recursive: true, force: true });
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
  }
  return {
    executablePath: binary,
    args: chromium.args.filter((flag) => !LEFT_OUT.has(flag)),
    source: '@sparticuz/chromium',
  };
}
