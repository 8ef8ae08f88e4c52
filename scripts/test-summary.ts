/**
 * The closing summary of `npm test`, read from the runner's raw TAP: the files that failed with
 * their passed and failed assertions, the ten slowest files, and a last line "N passed, M failed"
 * (assertions) that .ci/run repeats.
 */

/** What one test file's run says. */
export interface FileResult {
  file: string;
  /** The file's own verdict: a file can fail with every assertion passed (an exit code, a signal). */
  ok: boolean;
  passed: number;
  failed: number;
  /** Its run time in milliseconds. */
  ms: number;
  /** How the file's process ended when it failed without a failed assertion, e.g. "signal SIGABRT". */
  ended?: string;
}

const ASSERTION = /^\s+(not )?ok \d+\b/;
/** A subtest's closing line carries its time; an assertion's does not. */
const SUBTEST_END = /# time=[\d.]+ms\s*$/;
/** The runner's line for one test file, at the top level. */
const FILE_END = /^(not )?ok \d+ - (.+?)(?: # time=([\d.]+)ms)?\s*$/;

/**
 * Reads the runner's raw TAP (tap's `--output-file`): one top-level result per test file, its
 * assertions indented above it.
 */
export function parseRunTap(tap: string): FileResult[] {
  const results: FileResult[] = [];
  let passed = 0;
  let failed = 0;
  let last: FileResult | undefined;
  for (const line of tap.split('\n')) {
    const end = FILE_END.exec(line);
    if (end) {
      // Without a time, the runner gave up on the file (its own timeout: "not ok N - timeout!").
      last = { file: end[2]!, ok: !end[1], passed, failed, ms: end[3] === undefined ? 0 : Number(end[3]) };
      results.push(last);
      passed = failed = 0;
      continue;
    }
    // The YAML block under a failed file says how its process ended.
    const exit = /^ {2}(signal|exitCode): (\S+)$/.exec(line);
    if (exit && last && !last.ok && exit[2] !== 'null' && exit[2] !== '0') last.ended ??= `${exit[1]} ${exit[2]}`;
    if (!ASSERTION.test(line) || SUBTEST_END.test(line)) continue;
    if (line.trimStart().startsWith('not ')) failed++;
    else passed++;
  }
  return results;
}

/** The summary's lines; the last is "N passed, M failed" (assertions of every file). */
export function formatSummary(results: readonly FileResult[], slowest = 10): string[] {
  const lines = ['', `# Summary of ${results.length} test files`];
  const failedFiles = results.filter((r) => !r.ok);
  if (failedFiles.length > 0) {
    lines.push(`# Failed files (${failedFiles.length}), with their assertions:`);
    for (const r of failedFiles) {
      lines.push(
        `#   ${r.file}: ${r.passed} passed, ${r.failed} failed${r.ended ? ` (process ended: ${r.ended})` : ''}`,
      );
    }
  }
  lines.push(`# The ${Math.min(slowest, results.length)} slowest files:`);
  for (const r of [...results].sort((a, b) => b.ms - a.ms).slice(0, slowest)) {
    lines.push(`#   ${(r.ms / 1000).toFixed(1).padStart(7)} s  ${r.file}`);
  }
  const passed = results.reduce((n, r) => n + r.passed, 0);
  // A file that failed without a failed assertion still counts once.
  const failed = results.reduce((n, r) => n + (r.ok || r.failed > 0 ? r.failed : 1), 0);
  lines.push(`${passed} passed, ${failed} failed`);
  return lines;
}
