/**
 * References a reader can follow: the specification and its contract are not in the repository,
 * and issue numbers say nothing to a reader of the project, so comments and docs point at the
 * section of docs/ that states a rule instead, as `(docs/access.md, "Standing")`. This test fails
 * on a reference to a document the reader does not have, and on a docs reference whose file or
 * heading does not exist.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import t from 'tap';

const root = new URL('..', import.meta.url).pathname;

/** Not source or docs: dependencies, build output, local data and history. */
const SKIP_DIRS = new Set(['node_modules', '.git', '.data', '.tap', '.scratch', 'dist']);
const SKIP_FILES = new Set(['CHANGELOG.md', 'test/doc-references.test.ts']);
/** Applied migrations are checksummed (shared/db/migrate.ts), so their text is history too. */
const HISTORY_DIRS = ['shared/db/migrations/'];
const EXTENSIONS = /\.(ts|md|sql|ya?ml|sh|json)$/;

/** References to documents outside the repository, or to issue numbers. */
const UNFOLLOWABLE: readonly [string, RegExp][] = [
  ['contract section', /contract\s*\(?§/i],
  ['specification section', /\(specification[:,]/i],
  ['specification section number', /\bspec(?:ification)?\s*§/i],
  ['issue number', /\bissues?\s+\d+/i],
  ['specification file', /\b(?:contract|workspace-service)\.md\b/],
];

/** `docs/<file>.md, "<Section>"` or `docs/<file>.md "<Section>"`. */
const DOC_REFERENCE = /docs\/([a-z0-9-]+\.md),? "([^"]+)"/g;

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) out.push(...(await files(join(dir, entry.name))));
    } else if (EXTENSIONS.test(entry.name) && entry.name !== 'package-lock.json') {
      const path = relative(root, join(dir, entry.name));
      if (!SKIP_FILES.has(path)) out.push(path);
    }
  }
  return out;
}

/** A heading's text as a reference names it: no `#`s, backticks or trailing ` — [page](link)`. */
function headingText(line: string): string {
  return line
    .replace(/^#+\s*/, '')
    .replace(/\s+—\s+\[.*$/, '')
    .replaceAll('`', '')
    .trim();
}

const sources = await files(root);
const texts = new Map(
  await Promise.all(sources.map(async (path) => [path, await readFile(join(root, path), 'utf8')] as const)),
);

const headings = new Map<string, string[]>();
for (const name of (await readdir(join(root, 'docs'))).filter((name) => name.endsWith('.md'))) {
  const text = await readFile(join(root, 'docs', name), 'utf8');
  headings.set(
    name,
    text
      .split('\n')
      .filter((line) => line.startsWith('#'))
      .map(headingText),
  );
}

t.test('no source or docs file points at the specification, the contract or an issue number', async (t) => {
  t.ok(sources.length > 100, `scanned ${sources.length} files`);
  const found: string[] = [];
  for (const [path, text] of texts) {
    if (HISTORY_DIRS.some((dir) => path.startsWith(dir))) continue;
    text.split('\n').forEach((line, i) => {
      for (const [kind, pattern] of UNFOLLOWABLE) {
        if (pattern.test(line)) found.push(`${path}:${i + 1}: ${kind}: ${line.trim()}`);
      }
    });
  }
  t.same(found, [], 'point at the section of docs/ that states the rule instead');
});

t.test('every docs reference names a file and a heading that exist', async (t) => {
  const broken: string[] = [];
  let count = 0;
  for (const [path, text] of texts) {
    text.split('\n').forEach((line, i) => {
      for (const [, file, section] of line.matchAll(DOC_REFERENCE)) {
        count++;
        const names = headings.get(file!);
        const wanted = section!.replaceAll('`', '');
        // A heading may be named by its text before a colon or a parenthesis: "Containment" for
        // "Containment: sandbox child processes", "Record cursor" for "Record cursor (list_sessions, …)".
        const exists = names?.some(
          (name) => name === wanted || name.startsWith(`${wanted}: `) || name.startsWith(`${wanted} (`),
        );
        if (!exists) broken.push(`${path}:${i + 1}: docs/${file}, "${section}"${names ? '' : ' (no such file)'}`);
      }
    });
  }
  t.ok(count > 20, `checked ${count} references`);
  t.same(broken, [], 'each reference names an existing docs file and one of its headings');
});
