/**
 * A runner's share of event hook deliveries (docs/webhooks.md, "Event hooks"). Deliveries are
 * rows (migration 031) made in the statement that ends an execution, so they survive any restart;
 * any number of runners claim them side by side. A claim moves a delivery's `next_attempt_at`
 * past the attempt's time bound, which is its lease: a runner that dies mid-attempt leaves it to
 * be tried again, so delivery is at least once, and receivers deduplicate on `webhook-id`.
 *
 * Fairness: a claim takes at most `perOrg` deliveries of one organization (fewer by those of it
 * this runner already has in flight), walking the organizations that have pending deliveries and
 * taking the earliest due of each, round-robin, up to the free slots. An organization with a
 * hundred thousand deliveries due, or a receiver that answers slowly, holds `perOrg` of this
 * runner's slots, never all of them.
 *
 * Retries: any answer outside 2xx, or a failure (refused by the egress policy, timed out, reset),
 * is tried again after `retryBaseMs` doubled per attempt (at most an hour, ±20 %), until the
 * delivery is a day old; then it is `failed`. Every attempt is recorded (list_event_hook_attempts).
 */
import type { CredentialCipher } from '../../shared/crypto/credential-cipher.ts';
import type { Db } from '../../shared/db/db.ts';
import { startPeriodic, type Periodic } from '../../shared/periodic.ts';
import { signedHeaders } from '../../shared/webhooks/signature.ts';
import type { HookTransport } from '../../shared/webhooks/transport.ts';

interface DeliveryLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface DeliveryLoopOptions {
  db: Db;
  /** Opens the hooks' sealed secrets (the credentials' key). */
  cipher: CredentialCipher;
  transport: HookTransport;
  log: DeliveryLog;
  /** Deliveries this runner posts at once, and of them, for one organization. */
  inFlight: number;
  perOrg: number;
  /** One attempt's bound, connection to last byte. */
  attemptMs: number;
  /** How often due deliveries are looked for. Default 1 s. */
  pollMs?: number;
  /** The first retry's delay, doubled per attempt up to an hour. Default 30 s. */
  retryBaseMs?: number;
  /** Ended deliveries (and their attempts) are removed this long after they ended. Default 7 days. */
  keepDays?: number;
}

/** Deliveries are tried for a day after the end they announce. */
const GIVE_UP_SECONDS = 24 * 3600;
const MAX_RETRY_MS = 3600_000;
/** Bytes of a receiver's answer read (only its status matters); a longer answer is a failed attempt. */
const ANSWER_BYTES = 64 * 1024;
/** How long an error message an attempt records may be. */
const ERROR_CHARS = 500;
const CLEANUP_EVERY_MS = 10 * 60_000;
const CLEANUP_BATCH = 10_000;

interface Claimed {
  id: string;
  org_id: string;
  body: string;
  attempts: number;
  hook_id: string;
  url: string;
  iv: Buffer;
  auth_tag: Buffer;
  ciphertext: Buffer;
}

// The organizations with pending deliveries, one index probe each (a loose index scan), then
// each one's earliest due up to its allowance, round-robin across them up to the free slots.
const CLAIM_SQL = `
WITH RECURSIVE orgs AS (
  (SELECT org_id FROM hook_deliveries WHERE status = 'pending' ORDER BY org_id LIMIT 1)
  UNION ALL
  SELECT (SELECT d.org_id FROM hook_deliveries d WHERE d.status = 'pending' AND d.org_id > orgs.org_id
           ORDER BY d.org_id LIMIT 1)
    FROM orgs WHERE orgs.org_id IS NOT NULL
),
busy AS (SELECT * FROM unnest($3::uuid[], $4::int[]) AS b (org_id, n)),
ranked AS (
  SELECT x.id, x.next_attempt_at, x.nth
    FROM orgs o
    LEFT JOIN busy b ON b.org_id = o.org_id
   CROSS JOIN LATERAL (
     SELECT d.id, d.next_attempt_at, row_number() OVER (ORDER BY d.next_attempt_at, d.id) AS nth
       FROM hook_deliveries d
      WHERE d.org_id = o.org_id AND d.status = 'pending' AND d.next_attempt_at <= now()
      ORDER BY d.next_attempt_at, d.id
      LIMIT greatest($2::int - coalesce(b.n, 0), 0)
   ) x
   WHERE o.org_id IS NOT NULL
),
picked AS (SELECT id FROM ranked ORDER BY nth, next_attempt_at LIMIT $1::int)
UPDATE hook_deliveries d
   SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $5::double precision)
  FROM picked, event_hooks h
 WHERE d.id = picked.id AND h.id = d.hook_id AND d.status = 'pending' AND d.next_attempt_at <= now()
RETURNING d.id, d.org_id, d.payload::text AS body, d.attempts, h.id AS hook_id, h.url, h.iv, h.auth_tag, h.ciphertext`;

// The outcome of an attempt and its record, in one statement, only while the claim is still this
// attempt's (the same attempt number, still pending): a hook deleted meanwhile records nothing.
const RECORD_SQL = `
WITH cur AS (
  SELECT d.id,
         CASE WHEN $2::bool THEN 'delivered'
              WHEN d.created_at + make_interval(secs => $3::int) > now() + make_interval(secs => $4::double precision) THEN 'pending'
              ELSE 'failed' END AS next
    FROM hook_deliveries d
   WHERE d.id = $1::uuid AND d.attempts = $5::int AND d.status = 'pending'
),
upd AS (
  UPDATE hook_deliveries d
     SET status = cur.next,
         next_attempt_at = CASE WHEN cur.next = 'pending' THEN now() + make_interval(secs => $4::double precision) ELSE d.next_attempt_at END,
         ended_at = CASE WHEN cur.next = 'pending' THEN NULL ELSE now() END
    FROM cur WHERE d.id = cur.id
  RETURNING d.id, d.hook_id, d.execution_id, d.event, cur.next
)
INSERT INTO hook_attempts (delivery_id, hook_id, execution_id, event, attempt, outcome, status_code, error, duration_ms)
SELECT upd.id, upd.hook_id, upd.execution_id, upd.event, $5::int,
       CASE upd.next WHEN 'pending' THEN 'retrying' ELSE upd.next END, $6::int, $7::text, $8::int
  FROM upd`;

const CLEANUP_SQL = `DELETE FROM hook_deliveries WHERE id IN (
  SELECT id FROM hook_deliveries WHERE ended_at < now() - make_interval(days => $1::int) LIMIT $2::int)`;

/** The delay before attempt `attempt + 1`, in seconds. */
function backoffSeconds(baseMs: number, attempt: number): number {
  const ms = Math.min(MAX_RETRY_MS, baseMs * 2 ** Math.max(0, attempt - 1));
  return (ms * (0.8 + Math.random() * 0.4)) / 1000;
}

function errorText(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown };
  const text = [typeof e?.code === 'string' ? e.code : null, typeof e?.message === 'string' ? e.message : String(error)]
    .filter((part) => part !== null)
    .join(': ');
  return text.slice(0, ERROR_CHARS);
}

export class DeliveryLoop {
  readonly #options: Required<Omit<DeliveryLoopOptions, 'log'>> & { log: DeliveryLog };
  readonly #inFlight = new Map<string, number>();
  readonly #running = new Set<Promise<void>>();
  #poll: Periodic | null = null;
  #cleanup: Periodic | null = null;
  #stopping = false;

  constructor(options: DeliveryLoopOptions) {
    this.#options = { pollMs: 1000, retryBaseMs: 30_000, keepDays: 7, ...options };
  }

  /** Starts polling for due deliveries (and removing old ended ones). */
  start(): void {
    const onError = (err: unknown) => this.#options.log.warn({ err }, 'hook deliveries: claim failed; retrying');
    this.#poll = startPeriodic(() => this.#claim(), { everyMs: this.#options.pollMs, firstMs: 0, onError });
    this.#cleanup = startPeriodic(() => this.#options.db.query(CLEANUP_SQL, [this.#options.keepDays, CLEANUP_BATCH]), {
      everyMs: CLEANUP_EVERY_MS,
      onError,
    });
  }

  /** Stops claiming and waits for the attempts in flight (each bounded by `attemptMs`). */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all([this.#poll?.stop(), this.#cleanup?.stop()]);
    await Promise.all([...this.#running]);
  }

  /** Deliveries in flight on this runner (for tests and metrics). */
  inFlight(): number {
    return this.#running.size;
  }

  async #claim(): Promise<void> {
    const { db, inFlight, perOrg, attemptMs } = this.#options;
    const free = inFlight - this.#running.size;
    if (this.#stopping || free <= 0) return;
    const orgs = [...this.#inFlight.keys()];
    const { rows } = await db.query<Claimed>(CLAIM_SQL, [
      free,
      perOrg,
      orgs,
      orgs.map((org) => this.#inFlight.get(org)!),
      attemptMs / 1000 + 30,
    ]);
    for (const row of rows) {
      this.#inFlight.set(row.org_id, (this.#inFlight.get(row.org_id) ?? 0) + 1);
      const attempt = this.#attempt(row).finally(() => {
        this.#running.delete(attempt);
        const left = (this.#inFlight.get(row.org_id) ?? 1) - 1;
        if (left <= 0) this.#inFlight.delete(row.org_id);
        else this.#inFlight.set(row.org_id, left);
      });
      this.#running.add(attempt);
    }
  }

  async #attempt(row: Claimed): Promise<void> {
    const { cipher, transport, attemptMs, retryBaseMs, db, log } = this.#options;
    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      const secret = cipher.decrypt({ iv: row.iv, authTag: row.auth_tag, ciphertext: row.ciphertext }, row.hook_id);
      const answer = await transport({
        url: row.url,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'workspace-service-webhooks/1',
          ...signedHeaders(secret, row.id, row.body),
        },
        body: row.body,
        timeoutMs: attemptMs,
        maxResponseBytes: ANSWER_BYTES,
        orgId: row.org_id,
      });
      status = answer.status;
    } catch (caught) {
      error = errorText(caught);
    }
    const delivered = status !== null && status >= 200 && status < 300;
    try {
      await db.query(RECORD_SQL, [
        row.id,
        delivered,
        GIVE_UP_SECONDS,
        backoffSeconds(retryBaseMs, row.attempts),
        row.attempts,
        status,
        delivered ? null : error,
        Math.round(performance.now() - started),
      ]);
    } catch (err) {
      // The claim's lease runs out and another attempt is made: at least once.
      log.warn({ err, delivery_id: row.id }, 'hook deliveries: recording an attempt failed');
    }
  }
}
