/**
 * Preloaded (through NODE_OPTIONS, set by scripts/test.ts) into tap's runner, every test process and
 * every Node process a test starts, ahead of tap's own preloads. tap's process-info hooks record
 * every module a process loads (they read each file's source and look for a source map, then write
 * it all out at exit) for coverage and `--changed`, which this suite does not use; a pattern that
 * excludes every file turns the recording off: about 0.6 s of CPU per process. The runner sets its
 * own pattern in the environment it passes down, so only a preload that runs before the hooks are
 * registered can replace it.
 */
process.env._TAPJS_PROCESSINFO_EXCLUDE_ = '/./';
