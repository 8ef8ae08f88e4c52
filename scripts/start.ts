/**
 * `npm start`: one command for a control plane and a runner on this machine (scripts/supervisor.ts).
 *
 * The supervisor runs in a session of its own: a terminal's Ctrl-C goes to every process of the
 * foreground group, and PostgreSQL receiving it together with the children would shut down under
 * requests still finishing. Here only this process gets it, and it asks the supervisor to stop,
 * which stops the children first and PostgreSQL last.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { STOP_SIGNALS } from '../shared/shutdown.ts';

const supervisor = spawn(process.execPath, [fileURLToPath(new URL('./supervisor.ts', import.meta.url))], {
  // The IPC channel lets the supervisor notice if this process is killed (shared/shutdown.ts).
  stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
  detached: true,
});

let forwarded = false;
for (const signal of STOP_SIGNALS) {
  process.on(signal, () => {
    // npm forwards the terminal's Ctrl-C as well: one stop request is enough.
    if (forwarded) return;
    forwarded = true;
    supervisor.kill('SIGTERM');
  });
}

supervisor.on('exit', (code, signal) => {
  process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0));
});
