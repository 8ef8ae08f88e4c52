/**
 * Loaded into every test process (.taprc `node-arg: --import`): once tap has finished (the event
 * loop ran dry), the process leaves through `process.exit()`, as the service's own processes do
 * (shared/shutdown.ts), instead of Node's full environment teardown.
 *
 * Why: that teardown runs isolated-vm's clean-up hook, which frees its record of the main thread,
 * and can then garbage-collect; a handle object of isolated-vm still waiting for collection (the
 * definition check's modules and contexts, control-plane/app.ts's CodeChecker) runs its weak
 * callback without that record, and the process aborts with "Assertion 'environment != nullptr'
 * failed" after every assertion passed. `process.exit()` skips the teardown altogether.
 */
process.once('beforeExit', () => {
  // Registered now, after tap's and its process-info's own 'exit' listeners: it runs last.
  process.once('exit', () => process.exit());
});
