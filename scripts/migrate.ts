/**
 * `npm run migrate`: applies pending migrations to DATABASE_URL (or the embedded server's
 * `workspace` database, which must be running: `npm start`). `npm run migrate -- status` lists
 * every migration as applied, pending, changed (its file differs from what was applied: start-up
 * refuses that) or unknown (applied, but no file of this build has its name), and exits 1 when
 * any is changed.
 */
import { loadConfigOrExit } from '../shared/config.ts';
import { databaseUrlFor } from '../shared/db/database-url.ts';
import { migrate, migrationStatus } from '../shared/db/migrate.ts';

const config = loadConfigOrExit();
const url = databaseUrlFor(config);
const command = process.argv[2] ?? 'up';

try {
  if (command === 'status') {
    const status = await migrationStatus(url);
    for (const row of status)
      process.stdout.write(
        `${row.state.padEnd(8)} ${row.name}${row.appliedAt ? `  (applied ${row.appliedAt})` : ''}\n`,
      );
    const counts = Object.entries(Object.groupBy(status, (r) => r.state))
      .map(([state, rows]) => `${rows!.length} ${state}`)
      .join(', ');
    process.stdout.write(`${counts || 'no migrations'}\n`);
    process.exitCode = status.some((r) => r.state === 'changed') ? 1 : 0;
  } else if (command === 'up') {
    const applied = await migrate(url);
    process.stdout.write(applied.length ? `applied ${applied.join(', ')}\n` : 'nothing to apply\n');
  } else {
    process.stderr.write(`npm run migrate [-- status]: unknown command ${command}\n`);
    process.exitCode = 2;
  }
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exitCode = 1;
}
