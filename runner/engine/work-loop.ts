/**
 * The runner's intake: a pg-boss worker on the `executions` queue that fetches wake-ups in
 * batches, claims their executions in one statement and hands each claimed execution to the
 * runner, which works on many at once. The runner's wake-up listener (wake-listener.ts) wakes the
 * worker the moment a job is sent (the queue has `notify`), so a new execution does not wait for a
 * poll; polling every `pollSeconds` remains as the backstop and is what finds a sleeping
 * execution's delayed job on runners that did not park it. A created execution is usually not
 * fetched at all: its create announces it, and an idle runner claims it from the announcement
 * (`announce`), completing its wake-up job in the same statement.
 *
 * Jobs are wake-ups only and complete once their batch is claimed: ownership lives in the lease.
 * The handler returns (letting pg-boss fetch again) only when a whole batch fits under
 * `concurrency`, so this runner never fetches wake-ups it has no room for while other runners idle.
 *
 * A full runner still admits another organization's first execution: while it waits for room,
 * every `PROBE_MS` it fetches a few wake-ups itself (the queue's fair order puts organizations
 * with nothing running first, shared/queue/execution-jobs.ts) and claims those of organizations
 * with no execution in flight here, up to `batchSize` past `concurrency`; the others go back to
 * the queue at once, with their priority (due a second later, they made the last executions of a
 * one-organization burst wait that second: half the batch's rate). So one organization filling
 * every slot with long-running executions delays another's first node by about a second, not
 * until a slot frees.
 */
import type { Job, JobWithMetadata, PgBoss } from 'pg-boss';
import type { Db } from '../../shared/db/db.ts';
import { isUuid } from '../../shared/ids.ts';
import { enqueueExecution, type ExecutionJobData } from '../../shared/queue/execution-jobs.ts';
import { QUEUES } from '../../shared/queue/queues.ts';
import { claimExecutions, rescheduleEarly, type ClaimedExecution } from './claim.ts';

export interface WorkLoopOptions {
  boss: PgBoss;
  db: Db;
  runnerId: string;
  leaseSeconds: number;
  /** Executions this runner works on at once. */
  concurrency: number;
  /** The poison bound: a claim starts an execution's node only within it (see claimExecutions). */
  maxRecoveries: number;
  /** Wake-ups fetched per batch (at most `concurrency`). */
  batchSize: number;
  /** Backstop poll interval in seconds (≥ 0.5). */
  pollSeconds: number;
  /**
   * True for an execution this runner is working on now: its wake-ups are not claimed at once, so
   * a runner whose lease ran out while the execution was still in its hands (a starved lease
   * keeper) never claims it a second time and runs it twice in parallel. They are claimed once the
   * execution has left: the wake-up may be the one its own hand-back sent, committed before the
   * execution's worker thread told the runner it had left.
   */
  inFlight: (executionId: string) => boolean;
  /** Works on one claimed execution; resolves when it has left this runner. Never rejects. */
  execute: (execution: ClaimedExecution) => Promise<void>;
  /** Told how many jobs each batch held (queue statistics). */
  onJobs?: (count: number) => void;
  onError: (error: unknown) => void;
}

/** How often a full runner looks for organizations with nothing in flight here. */
const PROBE_MS = 1000;
/** Wake-ups one probe fetches. */
const PROBE_BATCH = 4;

export class WorkLoop {
  readonly #options: WorkLoopOptions;
  readonly #batchSize: number;
  #workerId: string | null = null;
  #inFlight = 0;
  /** Executions in flight here by organization. */
  readonly #orgs = new Map<string, number>();
  #probe: NodeJS.Timeout | undefined;
  #probing = false;
  /** Executions in flight whose wake-up arrived meanwhile: claimed again once they leave. */
  readonly #deferred = new Set<string>();
  #roomWaiters: Array<() => void> = [];
  #stopping = false;
  /**
   * False from a full batch of wake-ups until a batch short of full: wake-ups may be waiting in
   * the queue, whose fair order then decides what runs next, so announcements are not claimed.
   */
  #drained = true;
  /** Announced executions waiting for the announcement claim in flight. */
  readonly #announced = new Set<string>();
  #claimingAnnounced = 0;
  /** Executions of the fetched batch being claimed now. */
  #claimingBatch = 0;
  /** The announcement claims in progress, if any: `stop()` waits for them. */
  #announcing: Promise<void> | null = null;
  /** A wake-up job was sent while the announcement claim was in flight: fetch once it is done. */
  #wakeAfterAnnouncing = false;
  /**
   * Executions claimed (or being claimed) from their announcement, until they leave: a fetch of
   * their create's wake-up, racing the claim that completes it, is answered without a claim.
   */
  readonly #fromAnnouncement = new Set<string>();

  constructor(options: WorkLoopOptions) {
    this.#options = options;
    this.#batchSize = Math.max(1, Math.min(options.batchSize, options.concurrency));
  }

  /** Executions claimed by this loop and not yet left. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Starts fetching. */
  async start(): Promise<void> {
    if (this.#workerId !== null || this.#stopping) return;
    const { pollSeconds } = this.#options;
    this.#workerId = await this.#options.boss.work<ExecutionJobData>(
      QUEUES.executions.name,
      {
        batchSize: this.#batchSize,
        pollingIntervalSeconds: pollSeconds,
        notifyPollingIntervalSeconds: pollSeconds,
        // A full batch means more may be waiting: fetch again at once instead of at the next poll,
        // or a backlog left when NOTIFYs stop drains one batch per poll.
        burstWhenBatchFull: true,
      },
      (jobs) => this.#handle(jobs),
    );
    this.#probe = setInterval(() => void this.#probeWhenFull(), PROBE_MS);
    this.#probe.unref();
  }

  /** Fetches now instead of at the next poll (a parked execution of this runner is due). */
  wake(): void {
    if (this.#workerId !== null && !this.#stopping) this.#options.boss.notifyWorker(this.#workerId);
  }

  /** Stops fetching; resolves once the batch in hand (if any) is claimed. Executions in flight go on. */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#probe);
    for (const resolve of this.#roomWaiters.splice(0)) resolve();
    this.#announced.clear();
    await this.#announcing;
    if (this.#workerId === null) return;
    this.#workerId = null;
    await this.#options.boss.offWork(QUEUES.executions.name, { wait: true });
  }

  /**
   * Executions announced by their create (EXECUTION_CREATED_CHANNEL): claimed at once, without
   * fetching their wake-up jobs first, when this runner would take them from the queue now anyway —
   * it has room, is not waiting for room, and its last fetch found the queue drained (so the queue's
   * fair order has nothing to decide). Otherwise the announcement is dropped and the wake-up job
   * takes the usual path. Announcements that arrive while a claim of them is in flight leave
   * together in the next one.
   */
  announce(executionId: string): void {
    if (this.#workerId === null || this.#stopping || !this.#drained || this.#roomWaiters.length > 0) return;
    if (!isUuid(executionId) || this.#fromAnnouncement.has(executionId) || this.#options.inFlight(executionId)) return;
    // Room for it and still for a whole batch: a batch of wake-ups the intake is fetching or claiming
    // now was fetched because a whole one fitted, and must still fit when it is claimed.
    const taken = this.#inFlight + this.#claimingBatch + this.#claimingAnnounced + this.#announced.size;
    if (taken + 1 + this.#batchSize > this.#options.concurrency) return;
    this.#announced.add(executionId);
    this.#announcing ??= this.#claimAnnounced().finally(() => {
      this.#announcing = null;
      if (this.#wakeAfterAnnouncing) {
        this.#wakeAfterAnnouncing = false;
        this.wake();
      }
    });
  }

  /**
   * A wake-up job was sent (pg-boss's notification on the `executions` queue): fetch now, or right
   * after the announcement claim in flight, which completes the jobs of the executions it claims:
   * fetching while it runs would race it for them.
   */
  queued(): void {
    if (this.#announcing === null) this.wake();
    else this.#wakeAfterAnnouncing = true;
  }

  async #claimAnnounced(): Promise<void> {
    while (this.#announced.size > 0 && !this.#stopping) {
      const ids = [...this.#announced];
      this.#announced.clear();
      for (const id of ids) this.#fromAnnouncement.add(id);
      this.#claimingAnnounced = ids.length;
      let claimed: ClaimedExecution[] = [];
      try {
        claimed = await claimExecutions(
          this.#options.db,
          this.#options.runnerId,
          ids,
          this.#options.leaseSeconds,
          this.#options.maxRecoveries,
          { announced: true },
        );
      } catch (error) {
        // Nothing was claimed and no job completed: the wake-up jobs take the usual path.
        this.#options.onError(error);
      } finally {
        this.#claimingAnnounced = 0;
      }
      const taken = new Set(claimed.map((execution) => execution.id));
      // Not claimed (held elsewhere, already ended): their jobs are the queue's again, as any wake-up's.
      for (const id of ids) if (!taken.has(id)) this.#fromAnnouncement.delete(id);
      for (const execution of claimed) this.#launch(execution);
    }
  }

  async #handle(jobs: Job<ExecutionJobData>[]): Promise<void> {
    this.#options.onJobs?.(jobs.length);
    this.#drained = jobs.length < this.#batchSize;
    const ids: string[] = [];
    const seen = new Set<string>();
    for (const job of jobs) {
      const id = job.data?.execution_id;
      if (typeof id !== 'string' || !isUuid(id) || seen.has(id)) continue;
      seen.add(id);
      // The create's own wake-up (its id is the execution's) of an execution claimed from its
      // announcement: answered by that claim.
      if (job.id === id && this.#fromAnnouncement.has(id)) continue;
      if (this.#options.inFlight(id)) this.#deferred.add(id);
      else ids.push(id);
    }
    if (ids.length === 0) return;
    // Fetched while stopping: fail the batch so pg-boss offers the wake-ups again (to another runner).
    if (this.#stopping) throw new Error('The runner is stopping; the wake-ups go back to the queue.');
    // Thrown errors fail the batch: pg-boss retries its jobs, the recovery sweep backs them up.
    this.#claimingBatch = ids.length;
    let claimed: ClaimedExecution[];
    try {
      claimed = await this.#claim(ids);
    } finally {
      this.#claimingBatch = 0;
    }
    for (const execution of claimed) this.#launch(execution);
    if (claimed.length < ids.length) {
      const taken = new Set(claimed.map((execution) => execution.id));
      const unclaimed = ids.filter((id) => !taken.has(id));
      await this.#options.db
        .transaction((tx) => rescheduleEarly(tx, this.#options.boss, unclaimed))
        .catch(this.#options.onError);
    }
    await this.#roomForBatch();
  }

  #claim(ids: string[]): Promise<ClaimedExecution[]> {
    return claimExecutions(
      this.#options.db,
      this.#options.runnerId,
      ids,
      this.#options.leaseSeconds,
      this.#options.maxRecoveries,
    );
  }

  #launch(execution: ClaimedExecution): void {
    this.#inFlight += 1;
    const org = execution.org_id;
    this.#orgs.set(org, (this.#orgs.get(org) ?? 0) + 1);
    void this.#options.execute(execution).finally(() => {
      this.#inFlight -= 1;
      this.#fromAnnouncement.delete(execution.id);
      const left = (this.#orgs.get(org) ?? 1) - 1;
      if (left > 0) this.#orgs.set(org, left);
      else this.#orgs.delete(org);
      if (this.#deferred.delete(execution.id)) this.#reclaim(execution.id);
      if (this.#options.concurrency - this.#inFlight >= this.#batchSize) {
        for (const resolve of this.#roomWaiters.splice(0)) resolve();
      }
    });
  }

  /**
   * Claims an execution whose wake-up arrived while it was in flight here. Its job is complete,
   * so if this fails (or the runner stops) the recovery sweep is what wakes it.
   */
  #reclaim(id: string): void {
    if (this.#stopping) return;
    this.#inFlight += 1;
    this.#claim([id]).then(
      (claimed) => {
        this.#inFlight -= 1;
        for (const execution of claimed) this.#launch(execution);
      },
      (error: unknown) => {
        this.#inFlight -= 1;
        this.#options.onError(error);
      },
    );
  }

  /**
   * While the runner is full (the handler waits for room), fetches a few wake-ups and claims those
   * of organizations with nothing in flight here, at most `batchSize` past `concurrency`; puts the
   * rest back (due now, same priority) and completes what it fetched.
   */
  async #probeWhenFull(): Promise<void> {
    const { boss, db, concurrency } = this.#options;
    if (this.#probing || this.#stopping || this.#roomWaiters.length === 0) return;
    if (this.#inFlight >= concurrency + this.#batchSize) return;
    this.#probing = true;
    try {
      const jobs = (await boss.fetch<ExecutionJobData>(QUEUES.executions.name, {
        batchSize: PROBE_BATCH,
        includeMetadata: true,
      })) as JobWithMetadata<ExecutionJobData>[];
      if (jobs.length === 0) return;
      const byId = new Map<string, JobWithMetadata<ExecutionJobData>>();
      for (const job of jobs)
        if (typeof job.data?.execution_id === 'string' && isUuid(job.data.execution_id))
          byId.set(job.data.execution_id, job);
      const { rows } = await db.query<{ id: string; org_id: string }>(
        'SELECT id, org_id FROM executions WHERE id = ANY($1::uuid[])',
        [[...byId.keys()]],
      );
      const admit: string[] = [];
      const putBack: Array<{ id: string; priority: number }> = [];
      const admitted = new Set<string>();
      // Read again now, after the fetch and the query: if room has come meanwhile, the handler is
      // fetching its next batch and takes these wake-ups in the queue's fair order. Admitting one
      // here then would run an execution past `concurrency` that no full runner needed to admit
      // (the organization had nothing in flight only because its executions had just ended).
      const full = this.#roomWaiters.length > 0;
      for (const row of rows) {
        if (this.#options.inFlight(row.id)) this.#deferred.add(row.id);
        else if (
          full &&
          !this.#orgs.has(row.org_id) &&
          !admitted.has(row.org_id) &&
          this.#inFlight + admit.length < concurrency + this.#batchSize
        ) {
          admit.push(row.id);
          admitted.add(row.org_id);
        } else {
          putBack.push({ id: row.id, priority: byId.get(row.id)?.priority ?? 0 });
        }
      }
      if (putBack.length > 0) {
        await db.transaction(async (tx) => {
          for (const job of putBack) await enqueueExecution(boss, tx, job.id, { priority: job.priority });
        });
      }
      const claimed = await this.#claim(admit);
      for (const execution of claimed) this.#launch(execution);
      await boss.complete(
        QUEUES.executions.name,
        jobs.map((job) => job.id),
      );
    } catch (error) {
      // The fetched jobs expire and are retried by pg-boss; the recovery sweep backs them up.
      this.#options.onError(error);
    } finally {
      this.#probing = false;
    }
  }

  /** Resolves once a whole batch fits again, or at stop. */
  #roomForBatch(): Promise<void> {
    if (this.#stopping || this.#options.concurrency - this.#inFlight >= this.#batchSize) return Promise.resolve();
    this.#drained = false;
    return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }
}
