/**
 * The hostile tenant of bench/pressure.ts, in a process of its own (forked by
 * bench/pressure/hostile-child.ts): it prepares and runs one scenario of bench/pressure/ on the
 * parent's word, so the CPU the hostile tenant's requests take (copying and writing megabytes of
 * bodies, parsing answers) is not spent on the event loop that times the quiet tenant's requests.
 *
 * Messages from the parent, in order: `prepare` (the scenario's file, the API's address, the
 * database's URL for fixtures, the hostile account), `run`, `stop`. To the parent: `prepared` (or
 * `failed` with the error), then `ended` once the run settled (after `stop`, or earlier when it
 * failed), after which the process exits.
 */
import pg from 'pg';
import type { Account } from './client.ts';
import type { PressureContext, PressureScenario } from './pressure/scenario.ts';
import type { FromParent, ToParent } from './pressure/hostile-child.ts';

const send = (message: ToParent) => process.send!(message);
// The parent gone (a failure, Ctrl-C): nothing is left to press for.
process.on('disconnect', () => process.exit(0));

let scenario: PressureScenario | undefined;
let ctx: PressureContext | undefined;
let sql: pg.Pool | undefined;
const stop = new AbortController();

async function prepare(file: string, apiUrl: string, databaseUrl: string, hostile: Account): Promise<void> {
  const module = (await import(new URL(`./pressure/${file}.ts`, import.meta.url).href)) as {
    scenario?: PressureScenario;
  };
  if (!module.scenario) throw new Error(`bench/pressure/${file}.ts exports no scenario`);
  scenario = module.scenario;
  sql = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  ctx = {
    system: { apiUrl, sql },
    hostile,
    log: (m) => process.stderr.write(`[bench pressure] ${file}: ${m}\n`),
  };
  await scenario.prepare?.(ctx);
}

async function run(): Promise<void> {
  let error: string | undefined;
  try {
    await scenario!.run(ctx!, stop.signal);
  } catch (e) {
    error = (e as Error).message;
  }
  await sql?.end();
  send(error === undefined ? { type: 'ended' } : { type: 'ended', error });
  process.disconnect();
}

process.on('message', (message: FromParent) => {
  switch (message.type) {
    case 'prepare':
      prepare(message.file, message.apiUrl, message.databaseUrl, message.hostile).then(
        () => send({ type: 'prepared' }),
        (e: unknown) => send({ type: 'failed', error: (e as Error).message }),
      );
      break;
    case 'run':
      void run();
      break;
    case 'stop':
      stop.abort();
      break;
  }
});
