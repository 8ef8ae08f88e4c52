import type { AuthContext } from './auth/authenticate.ts';
import type { Principal } from './auth/principal.ts';
import type { CodeCheck } from '../shared/workflow/validate-graph.ts';
import type { EventListener } from './events/listener.ts';
import type { SessionRemoval } from './workflow/session-reaper.ts';
import type { JobQueue } from '../shared/queue/execution-jobs.ts';
import type { ExecutionCreator } from './workflow/execution-creator.ts';
import type { ModelHost } from '../shared/onnx/model-host.ts';
import type { S3Objects } from '../shared/onnx/s3-objects.ts';
import type { Tracing } from '../shared/tracing/tracing.ts';
import type { FairQueue } from '../shared/fair-queue.ts';

/** What every route and command handler gets: the process's services, nothing global. */
export interface AppContext extends AuthContext {
  /** Compiles `logic.code` sources when definitions are checked (sandbox/check.ts); disposed when the app closes. */
  codeCheck: CodeCheck;
  /** Live event subscriptions of this process (control-plane/events/listener.ts); closed with the app. */
  events: EventListener;
  /** Removes sessions this process moved to `deleting` (control-plane/workflow/session-reaper.ts). */
  sessionRemoval: SessionRemoval;
  /** Sends runner jobs (the control plane's started pg-boss), always inside the transaction of the row they announce. */
  queue: JobQueue;
  /** Creates executions with their jobs, batched across requests (control-plane/workflow/execution-creator.ts). */
  creates: ExecutionCreator;
  /** Runs ONNX models for `run_model` in a child process started on first use (shared/onnx/model-host.ts); closed with the app. */
  models: ModelHost;
  /**
   * Turns of the schedules' cron checks (control-plane/commands/schedules.ts): one check at a
   * time on this control plane, organizations taking turns.
   */
  cronChecks: FairQueue;
  /** The S3 store of model bytes when `MODEL_STORE=s3`; null: PostgreSQL large objects. */
  modelObjects: S3Objects | null;
  /** Spans of this process (shared/tracing/); null while tracing is off. */
  tracing: Tracing | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
  interface FastifyRequest {
    /** Set by the auth hook on every route not marked `config: { public: true }`. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** The route needs no credential (sign-in, refresh). */
    public?: boolean;
    /** A large body of this route is heavy work, admitted per account and address (control-plane/plugins/heavy-work.ts). */
    heavyBody?: boolean;
  }
}
