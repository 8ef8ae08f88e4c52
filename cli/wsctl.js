#!/usr/bin/env node
// The `bin` of cli/package.json: `npm install` links it as node_modules/.bin/wsctl (so `npx wsctl`
// runs it directly) and `npm link` in cli/ puts it on PATH. The CLI is TypeScript run by Node 24's
// type stripping. Started by an older Node (the one on PATH), it runs itself again under the
// project's Node 24 (the `node` package of the dependencies), found next to this file.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `$XDG_CACHE_HOME/wsctl/node-compile-cache` (else under `~/.cache`), made one level at a time
 * (0700); undefined when it cannot be made. Not a recursive mkdir, in Node or through
 * enableCompileCache: it spins forever on some paths (a missing directory under /proc).
 */
function compileCacheDirectory() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  const directory = join(base, 'wsctl', 'node-compile-cache');
  for (const path of [base, join(base, 'wsctl'), directory]) {
    try {
      mkdirSync(path, { mode: 0o700 });
    } catch (error) {
      if (error.code !== 'EEXIST') return undefined;
    }
  }
  return directory;
}

const [major] = process.versions.node.split('.').map(Number);
if (major >= 24) {
  // Node's compile cache keeps the compiled code of the CLI's modules between runs: a start costs
  // about a third of the CPU after the first. It lives under the user's own cache directory, not
  // the shared temporary one, where another user could plant code for this one to load.
  const cache = compileCacheDirectory();
  if (cache) module.enableCompileCache?.(cache);
  const [{ main }, { processIo }] = await Promise.all([import('./wsctl.ts'), import('./context.ts')]);
  process.exitCode = await main(process.argv.slice(2), processIo());
} else {
  // This file's real path (ES modules resolve symbolic links), so a linked wsctl finds the
  // repository's node_modules whatever directory it was started from.
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const node = [join(root, 'node_modules', 'node', 'bin', 'node'), join(root, 'node_modules', '.bin', 'node')].find(
    (path) => existsSync(path),
  );
  if (!node) {
    process.stderr.write(
      `error: node_version: wsctl needs Node 24 (this is ${process.version}) and found none in ${join(root, 'node_modules')}; run npm install there.\n`,
    );
    process.exit(2);
  }
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  // Ctrl-C reaches both processes (one process group): the child decides; this one waits for it.
  const forward = (signal) => child.kill(signal);
  process.on('SIGINT', () => {});
  process.on('SIGTERM', forward);
  process.on('SIGHUP', forward);
  child.on('error', (error) => {
    process.stderr.write(`error: node_version: cannot start ${node}: ${error.message}\n`);
    process.exit(2);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
}
