/**
 * A hostile tenant sending large bodies in parallel: 60 `upload_records` of ≈ 7 MB (10,000
 * records) and 40 `upload_session_object` of ≈ 4.5 MB at once, each sent again as soon as it is
 * answered. The control plane admits two large bodies per account and four per address at a time
 * (docs/operations.md, "What one tenant can do to the others"); the rest are refused with 429
 * before they are read, and once the dataset revision is full its uploads are 409. A refused
 * request is sent again after its `Retry-After` (1 s; a failed send after 1 s too): retrying
 * sooner would measure the bench client's own CPU, sending gigabytes a second over loopback, on a
 * machine whose cores it shares with the system.
 */
import { command, setOverride, type Account } from '../client.ts';
import type { HostileSystem, PressureContext, PressureScenario } from './scenario.ts';

const RECORD_UPLOADS = 60;
const OBJECT_UPLOADS = 40;
const REFUSED_PAUSE_MS = 1000;

interface Targets {
  nlpRevision: string;
  workflowRevision: string;
  sessionId: string;
}

// Built and encoded once: the bodies are the same at every call (the server parses each anew).
const RECORDS_BODY = Buffer.from(
  JSON.stringify({
    records: Array.from({ length: 10_000 }, (_, i) => ({ text: `${i} ${'lorem ipsum '.repeat(57)}`, labels: ['x'] })),
  }),
);
const objectBody = (sessionId: string, alias: string) =>
  Buffer.from(JSON.stringify({ session_id: sessionId, alias, value: { blob: 'o'.repeat(4_500_000) } }));

let targets: Targets | undefined;

async function prepareTargets(system: HostileSystem, hostile: Account): Promise<Targets> {
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  await setOverride(system, 'nlp.enabled', 'user', hostile.userId, true);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${system.apiUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${hostile.token}` },
      body: JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as any;
  };
  const org = (await post('/v1/orgs', { alias: `pressure-bodies-${tag}` })).org;
  const nlp = await post(`/v1/blobs/${org.id}`, { type: 'svc.dataset.nlp', alias: `pressure-nlp-${tag}` });
  const flow = await post(`/v1/blobs/${org.id}`, { type: 'svc.compute.workflow', alias: `pressure-flow-${tag}` });
  const session = (await command(system, hostile, flow.revision.id, 'create_session', {})).session;
  return { nlpRevision: nlp.revision.id, workflowRevision: flow.revision.id, sessionId: session.id };
}

/** Answer statuses by class, for the progress line. */
type Tally = Map<string, number>;

function count(tally: Tally, what: string): void {
  tally.set(what, (tally.get(what) ?? 0) + 1);
}

/** Sends `body` to the command until `signal` aborts; each answer (or failed send) is tallied. */
async function press(
  ctx: PressureContext,
  signal: AbortSignal,
  path: string,
  body: () => Buffer,
  tally: Tally,
): Promise<void> {
  while (!signal.aborted) {
    let status: number | 'network';
    let pause = REFUSED_PAUSE_MS;
    try {
      const res = await fetch(`${ctx.system.apiUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ctx.hostile.token}` },
        body: body(),
      });
      await res.arrayBuffer();
      status = res.status;
      const retryAfter = Number(res.headers.get('retry-after'));
      if (retryAfter > 0) pause = retryAfter * 1000;
    } catch {
      // A refusal answered before the body was read may cut the upload short.
      status = 'network';
    }
    count(tally, String(status));
    if (status !== 200 && !signal.aborted) await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

export const scenario: PressureScenario = {
  name: 'large bodies: 60 × 7 MB upload_records + 40 × 4.5 MB upload_session_object in parallel',
  async prepare(ctx) {
    targets = await prepareTargets(ctx.system, ctx.hostile);
  },
  async run(ctx, signal) {
    targets ??= await prepareTargets(ctx.system, ctx.hostile);
    const { nlpRevision, workflowRevision, sessionId } = targets;
    const tally: Tally = new Map();
    // A few aliases, rewritten in turn: the session's object count stays small. Built once each.
    const bodies = Array.from({ length: 8 }, (_, i) => objectBody(sessionId, `pressure-${i}`));
    let next = 0;
    const objects = () => bodies[next++ % bodies.length]!;
    await Promise.all([
      ...Array.from({ length: RECORD_UPLOADS }, () =>
        press(ctx, signal, `/v1/revisions/${nlpRevision}/upload_records`, () => RECORDS_BODY, tally),
      ),
      ...Array.from({ length: OBJECT_UPLOADS }, () =>
        press(ctx, signal, `/v1/revisions/${workflowRevision}/upload_session_object`, objects, tally),
      ),
    ]);
    const summary = [...tally.entries()]
      .sort()
      .map(([status, n]) => `${status}: ${n}`)
      .join(', ');
    ctx.log(`large bodies: answers ${summary}`);
  },
};
