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

// TEST_CPU_LOG=<file>: each test process appends its file, wall time and the CPU seconds it and its
// reaped children (sandbox processes, spawned services) spent, to find where the suite's time goes.
const cpuLog = process.env.TEST_CPU_LOG;
if (cpuLog) {
  const { appendFileSync, readFileSync } = await import('node:fs');
  process.once('exit', () => {
    const usage = process.resourceUsage();
    // /proc/self/stat fields 16 and 17: reaped children's user and system time, in clock ticks.
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    const children = (Number(fields[13]) + Number(fields[14])) / 100;
    const self = (usage.userCPUTime + usage.systemCPUTime) / 1e6;
    const file = process.argv.find((a) => a.endsWith('.test.ts')) ?? process.argv.join(' ');
    appendFileSync(cpuLog, `${file}\t${process.uptime().toFixed(1)}\t${self.toFixed(1)}\t${children.toFixed(1)}\n`);
  });
}
