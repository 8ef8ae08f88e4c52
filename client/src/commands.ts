/**
 * The commands' params and results, as docs/commands.md, docs/workflow.md, docs/executions.md,
 * docs/sessions-and-events.md and docs/session-contents.md describe them. Commands are one
 * generic route in the OpenAPI document (`POST /v1/revisions/{revision_id}/{command}`), so these
 * types are written here, not generated; test/client.test.ts runs each family against the service.
 * Over JSON-RPC, revision commands take `revision_id` among the params (`Rev<…>`).
 */
import type { DefinitionIssue, LimitObject } from './errors.ts';

/** An id or an alias (sessions, definitions). */
export type Ref = string;

export interface SessionRecord {
  id: string;
  alias: string | null;
  revision_id: string;
  status: 'active' | 'deleting';
  created_at: string;
  held?: Record<string, number>;
}

export interface DefinitionRecord {
  id: string;
  alias: string | null;
  category: 'workflow' | 'playground';
  graph: Graph;
  created_at: string;
  [field: string]: unknown;
}

export interface GraphNode {
  processor: string;
  config?: Record<string, unknown>;
  routes?: Record<string, string | null>;
}

export interface Graph {
  start: string;
  nodes: Record<string, GraphNode>;
}

export type ExecutionStatus = 'queued' | 'running' | 'sleeping' | 'succeeded' | 'failed' | 'cancelled';

export interface ExecutionRecord {
  id: string;
  session_id: string;
  definition_id: string;
  status: ExecutionStatus;
  input_data: unknown;
  output: unknown;
  error: { code: string; message: string; limit?: LimitObject } | null;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  node_runs: number;
  limits: Record<string, unknown>;
}

/** A session or execution event (docs/sessions-and-events.md, docs/architecture.md). */
export interface EventRecord {
  /** A string of digits, increasing. */
  id: string;
  kind: string;
  at: string;
  session_id: string;
  execution_id: string | null;
  node: string | null;
  attributes: Record<string, unknown>;
}

export interface SessionObjectRecord {
  alias: string;
  kind?: string;
  size: number;
  [field: string]: unknown;
}

export interface ThreadItemRecord {
  id: string;
  thread: string;
  text: string | null;
  data: unknown;
  files: string[];
  [field: string]: unknown;
}

export interface UserRecord {
  id: string;
  alias: string | null;
  name: string;
  kind: string;
  created_at: string;
  [field: string]: unknown;
}

export interface CheckVerdict {
  status: 'success' | 'failure';
  errors?: DefinitionIssue[];
  warnings: DefinitionIssue[];
}

/** Opaque-cursor page params: omit `cursor` on the first call. */
export interface PageParams {
  cursor?: string;
  limit?: number;
}

type Rev<P> = P & { revision_id: string };

/**
 * Every typed command: params as sent over REST (the revision in the path) and result as the
 * JSON-RPC `result` (the REST body without `status`).
 */
export interface Commands {
  get_user: { params: { user_id: string }; result: { user: UserRecord }; revision: false };
  list_definitions: { params: { category?: 'workflow' | 'playground' }; result: { definitions: DefinitionRecord[] }; revision: true };
  create_definition: {
    params: { alias?: string; category: 'workflow' | 'playground'; graph: unknown };
    result: { definition: DefinitionRecord; warnings: DefinitionIssue[] };
    revision: true;
  };
  delete_definition: { params: { definition_id: Ref }; result: { definition: DefinitionRecord }; revision: true };
  check_definition: { params: { graph: unknown }; result: CheckVerdict; revision: true };
  create_session: { params: { alias?: string }; result: { session: SessionRecord }; revision: true };
  get_session: { params: { session_id: Ref }; result: { session: SessionRecord }; revision: true };
  delete_session: { params: { session_id: Ref }; result: { session: SessionRecord }; revision: true };
  list_sessions: { params: { start_session_id?: string }; result: { sessions: SessionRecord[]; last_session_id: string | null }; revision: true };
  create_execution: {
    params: { session_id: Ref; definition_id: Ref; input_data?: unknown };
    result: { execution: ExecutionRecord };
    revision: true;
  };
  get_execution: { params: { execution_id: string }; result: { execution: ExecutionRecord }; revision: true };
  cancel_execution: { params: { execution_id: string }; result: { execution: ExecutionRecord }; revision: true };
  list_executions: {
    params: { session_id: Ref; start_session_id?: string };
    result: { executions: ExecutionRecord[]; last_session_id: string | null };
    revision: true;
  };
  list_session_events: { params: { session_id: Ref } & PageParams; result: { events: EventRecord[]; cursor: string | null }; revision: true };
  list_execution_events: { params: { execution_id: string } & PageParams; result: { events: EventRecord[]; cursor: string | null }; revision: true };
  upload_session_object: { params: { session_id: Ref; alias: string; value: unknown }; result: { object: SessionObjectRecord }; revision: true };
  list_session_objects: { params: { session_id: Ref } & PageParams; result: { objects: SessionObjectRecord[]; cursor: string | null }; revision: true };
  upload_session_file: {
    params: { session_id: Ref; alias: string; content_base64: string; content_type?: string };
    result: { object: SessionObjectRecord };
    revision: true;
  };
  download_session_file: { params: { session_id: Ref; alias: string }; result: { content_base64: string; size: number; content_type: string }; revision: true };
  post_session_thread_item: {
    params: { session_id: Ref; thread?: string; text?: string; data?: unknown; files?: string[] };
    result: { thread_item: ThreadItemRecord };
    revision: true;
  };
  list_session_thread_items: {
    params: { session_id: Ref; thread?: string } & PageParams;
    result: { thread_items: ThreadItemRecord[]; cursor: string | null };
    revision: true;
  };
  mutate_session_graph: { params: { session_id: Ref; mutations: unknown[] }; result: { elements: unknown[]; deleted: unknown[] }; revision: true };
  list_session_graph_elements: {
    params: { session_id: Ref; kind?: 'node' | 'edge'; label?: string } & PageParams;
    result: { elements: unknown[]; cursor: string | null };
    revision: true;
  };
  query_session_graph: { params: { session_id: Ref; query: unknown }; result: { nodes: unknown[]; edges: unknown[]; ends: unknown[] }; revision: true };
}

export type CommandName = keyof Commands;

/** A command's params over JSON-RPC: revision commands add `revision_id`. */
export type RpcParams<M extends CommandName> = Commands[M]['revision'] extends true ? Rev<Commands[M]['params']> : Commands[M]['params'];

export type CommandResult<M extends CommandName> = Commands[M]['result'];

/** `subscribe`'s params: a revision and exactly one of a session and an execution. */
export type SubscribeParams = { revision_id: string } & ({ session_id: Ref; execution_id?: never } | { execution_id: string; session_id?: never });
