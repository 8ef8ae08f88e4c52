/**
 * The commands' params and results over JSON-RPC, derived from the generated REST types: every
 * revision command is one path of the OpenAPI document (`/v1/revisions/{revision_id}/<command>`)
 * with its params as the JSON body and its result beside `status` in the answer, and JSON-RPC
 * takes the same params plus `revision_id` and answers the same fields without `status`
 * (docs/commands.md). So `npm run client:types` retypes the WebSocket client too. Written here:
 * the three that differ between the transports (`get_user`, JSON-RPC only; the session-file
 * commands, binary over REST and base64 over JSON-RPC).
 */
import type { components, paths } from './rest-types.ts';

type Schemas = components['schemas'];

export type SessionRecord = Schemas['Session'];
export type DefinitionRecord = Schemas['Definition'];
export type ExecutionRecord = Schemas['Execution'];
export type ExecutionStatus = ExecutionRecord['status'];
/** A session or execution event, as the listings and `event` notifications carry it. */
export type EventRecord = Schemas['Event'];
export type SessionObjectRecord = Schemas['SessionObject'];
export type ThreadItemRecord = Schemas['ThreadItem'];
export type UserRecord = Schemas['User'];

type CommandPath = Extract<keyof paths, `/v1/revisions/{revision_id}/${string}`>;
type NameOf<P> = P extends `/v1/revisions/{revision_id}/${infer M}` ? M : never;
type PostOf<P extends keyof paths> = paths[P] extends { post: infer O } ? O : never;
type JsonBodyOf<O> = O extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : O extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;
type AnswerOf<O> = O extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never;
/** The answer without the envelope's `status: "success"` (distributes over unions). */
type WithoutStatus<R> = R extends { status: 'success' } ? Omit<R, 'status'> : R;

/** Params without `revision_id` (as REST takes them) and the JSON-RPC result, per command. */
type Generated = {
  [P in CommandPath as PostOf<P> extends never ? never : NameOf<P>]: {
    params: NonNullable<JsonBodyOf<PostOf<P>>>;
    // check_definition's verdict keeps its own status over JSON-RPC (docs/workflow.md, "`check_definition {graph}`").
    result: NameOf<P> extends 'check_definition' ? AnswerOf<PostOf<P>> : WithoutStatus<AnswerOf<PostOf<P>>>;
    revision: true;
  };
};

interface Written {
  get_user: { params: { user_id: string }; result: { user: UserRecord }; revision: false };
  upload_session_file: {
    params: { session_id: string; alias: string; content_base64: string; content_type?: string };
    result: { object: SessionObjectRecord };
    revision: true;
  };
  download_session_file: {
    params: { session_id: string; alias: string };
    result: { content_base64: string; size: number; content_type: string };
    revision: true;
  };
}

/** Every typed command: `params` as REST takes them, `result` as JSON-RPC answers it. */
export type Commands = Omit<Generated, keyof Written> & Written;

export type CommandName = keyof Commands & string;

type HeaderOf<O> = O extends { parameters: { header?: infer H } } ? NonNullable<H> : never;

/** The commands that create: their path takes `Idempotency-Key`, so over JSON-RPC `idempotency_key`. */
export type CreatingCommandName = {
  [P in CommandPath]: [HeaderOf<PostOf<P>>] extends [never]
    ? never
    : 'idempotency-key' extends keyof HeaderOf<PostOf<P>>
      ? NameOf<P>
      : never;
}[CommandPath];

/**
 * A command's params over JSON-RPC: revision commands add `revision_id`; creating ones may carry
 * their own `idempotency_key` (else the client adds one).
 */
export type RpcParams<M extends CommandName> = (Commands[M]['revision'] extends true
  ? Commands[M]['params'] & { revision_id: string }
  : Commands[M]['params']) &
  (M extends CreatingCommandName ? { idempotency_key?: string } : unknown);

export type CommandResult<M extends CommandName> = Commands[M]['result'];

/** `subscribe`'s params: a revision and exactly one of a session and an execution. */
export type SubscribeParams = { revision_id: string } & (
  { session_id: string; execution_id?: never } | { execution_id: string; session_id?: never }
);
