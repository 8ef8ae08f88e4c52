import { z } from 'zod';
import { BLOB_TYPE_NAMES } from '../../shared/blob-types.ts';
import { LIMIT_GROUPS, OVERRIDE_LEVELS } from '../../shared/limits/catalog.ts';
import { ROLES } from '../../shared/roles.ts';
import { limitObjectSchema, limitValueSchema } from './route-schema.ts';
import { retrySchema, timeoutSchema } from '../../shared/workflow/node-policy.ts';

/**
 * The records of REST answers as they go over the wire (docs/api.md, "Conventions"), one zod schema
 * each. They name the OpenAPI components (`meta.id`) and are what the test-time response check
 * holds every answer to, so a field added to a record builder (control-plane/sql/*.ts) without its
 * schema fails the route tests.
 */

const uuid = z.uuid();
/** Timestamps leave as JSON dates: ISO 8601 in UTC. */
const timestamp = z.iso.datetime({ offset: true });
const role = z.enum(ROLES);

export const userSchema = z
  .strictObject({
    id: uuid,
    alias: z.string().nullable(),
    name: z.string(),
    kind: z.enum(['human', 'service']),
    created_at: timestamp,
    email: z.string().nullable().optional().meta({ description: "Only in the user's own profile." }),
    anonymous: z.boolean().optional().meta({ description: "Only in the user's own profile." }),
    owner_id: uuid
      .nullable()
      .optional()
      .meta({ description: "A service account's owner, in its own profile and its owner's view." }),
  })
  .meta({
    id: 'User',
    description:
      'A user profile: public fields for everyone, private ones (email, anonymous, owner_id) for the user itself.',
  });

export const orgSchema = z
  .strictObject({
    id: uuid,
    alias: z.string(),
    name: z.string(),
    visibility: z.enum(['private', 'public']),
    owner_id: uuid,
    created_at: timestamp,
  })
  .meta({ id: 'Organization' });

export const blobSchema = z
  .strictObject({
    id: uuid,
    alias: z.string(),
    org_id: uuid,
    type: z.enum(BLOB_TYPE_NAMES as [string, ...string[]]),
    name: z.string(),
    visibility: z.enum(['private', 'public']),
    status: z.enum(['ready', 'failed']),
    created_at: timestamp,
  })
  .meta({ id: 'Blob' });

export const revisionSchema = z
  .strictObject({
    id: uuid,
    blob_id: uuid,
    number: z.number().int().positive(),
    status: z.enum(['pending', 'ready', 'failed']),
    created_at: timestamp,
  })
  .meta({ id: 'Revision' });

/** An uploaded ONNX model (control-plane/routes/models.ts). */
const tensorSchema = z.strictObject({
  name: z.string(),
  type: z.string(),
  shape: z.array(z.union([z.number(), z.string()])),
});
export const modelSchema = z
  .strictObject({
    size: z.number().int().nonnegative(),
    sha256: z.string(),
    inputs: z.array(tensorSchema).nullable(),
    outputs: z.array(tensorSchema).nullable(),
  })
  .meta({ id: 'Model' });

/** Get Revision adds what the revision holds against its quotas (and an NLP dataset's record count). */
export const revisionDetailSchema = revisionSchema
  .extend({
    held: z
      .record(z.string(), z.number().int().nonnegative())
      .meta({ description: 'Limit id → how many the revision holds.' }),
    counts: z
      .strictObject({ records: z.number().int().nonnegative() })
      .optional()
      .meta({ description: 'NLP datasets only.' }),
    model: modelSchema.nullable().optional().meta({
      description:
        'ONNX revisions only: the model ONNX Runtime opened at upload (size, sha256, inputs, outputs), null while none is stored.',
    }),
  })
  .meta({ id: 'RevisionDetail' });

export const memberSchema = z
  .strictObject({
    target: z.enum(['organization', 'blob']),
    target_id: uuid,
    user_id: uuid,
    role,
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Member' });

export const apiKeySchema = z
  .strictObject({
    id: uuid,
    name: z.string(),
    target: z.enum(['organization', 'blob', 'user']),
    target_id: uuid,
    role,
    user_id: uuid.meta({ description: 'The account the key authenticates as.' }),
    prefix: z.string().meta({ description: 'The public part of the key, to recognise it.' }),
    created_by: uuid,
    created_at: timestamp,
    last_used_at: timestamp.nullable(),
  })
  .meta({ id: 'ApiKey' });

/** Mint API Key's answer: the record and the whole key, shown this once. */
export const mintedApiKeySchema = apiKeySchema
  .extend({ key: z.string().meta({ description: 'The secret, `wsk_…`; never shown again.' }) })
  .meta({ id: 'MintedApiKey' });

export const credentialSchema = z
  .strictObject({
    id: uuid,
    name: z.string(),
    target: z.enum(['organization', 'blob', 'user']),
    target_id: uuid,
    created_by: uuid.nullable(),
    created_at: timestamp,
    /** The blobs whose workflows may resolve an organization credential; null: every blob of the organization. */
    blob_ids: z.array(uuid).nullable(),
  })
  .meta({ id: 'Credential', description: 'A stored credential: metadata only, never the secret.' });

/** A session file as Upload Session File answers it (shared/session/session-objects-sql.ts). */
export const sessionFileSchema = z
  .strictObject({
    id: uuid,
    session_id: uuid,
    alias: z.string(),
    kind: z.literal('file'),
    content_type: z.string().nullable(),
    size: z.number().int().nonnegative(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'SessionFile' });

/** A session object or file as the session-content commands answer it. */
export const sessionObjectSchema = z
  .strictObject({
    id: uuid,
    session_id: uuid,
    alias: z.string(),
    kind: z.enum(['object', 'file']),
    value: z.unknown().optional().meta({ description: 'Objects: the JSON value.' }),
    content_type: z.string().nullable().optional().meta({ description: 'Files: the stored content type.' }),
    size: z.number().int().nonnegative(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'SessionObject' });

/** A thread item (shared/session/thread-items-sql.ts). */
export const threadItemSchema = z
  .strictObject({
    id: uuid,
    session_id: uuid,
    thread: z.string(),
    text: z.string().nullable(),
    data: z.unknown(),
    files: z.array(z.string()).meta({ description: 'Aliases of session files.' }),
    author_id: uuid.nullable(),
    execution_id: uuid.nullable(),
    created_at: timestamp,
  })
  .meta({ id: 'ThreadItem' });

/** A schedule of a scheduler revision (shared/scheduler/schedule-record.ts). */
export const scheduleSchema = z
  .strictObject({
    id: uuid,
    alias: z.string().nullable(),
    revision_id: uuid,
    cron: z.string(),
    timezone: z.string(),
    target: z.strictObject({ revision_id: uuid, session_id: uuid, definition_id: uuid }),
    input_data: z.unknown(),
    enabled: z.boolean(),
    next_fire_at: timestamp.nullable(),
    created_by: uuid,
    updated_by: uuid,
    created_at: timestamp,
  })
  .meta({ id: 'Schedule' });

/** One fire of a schedule (a scheduler revision's `list_executions`). */
export const scheduleRunSchema = z
  .strictObject({
    id: uuid,
    schedule_id: uuid,
    due_at: timestamp.nullable(),
    fired_at: timestamp,
    status: z.enum(['started', 'refused', 'failed']),
    execution_id: uuid.nullable(),
    error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
    limit: limitObjectSchema.nullable(),
  })
  .meta({ id: 'ScheduleRun' });

/** A webhook trigger of a workflow session (control-plane/sql/triggers.ts): never its secret. */
export const triggerSchema = z
  .strictObject({
    id: uuid,
    path: z.string().meta({ description: "`/v1/hooks/<id>`: where signed requests go, under the service's base URL." }),
    revision_id: uuid,
    session_id: uuid,
    definition_id: uuid,
    created_by: uuid,
    acting_as: uuid.meta({ description: 'The account requests act as: whoever set the current secret.' }),
    created_at: timestamp,
    secret_set_at: timestamp,
  })
  .meta({ id: 'Trigger' });

/** The ends of executions an event hook can subscribe to. */
export const HOOK_EVENTS = ['execution.succeeded', 'execution.failed', 'execution.cancelled'] as const;

/** An event hook of a workflow session (control-plane/sql/event-hooks.ts): never its secret. */
export const eventHookSchema = z
  .strictObject({
    id: uuid,
    revision_id: uuid,
    session_id: uuid,
    url: z.string(),
    events: z.array(z.enum(HOOK_EVENTS)),
    created_by: uuid,
    created_at: timestamp,
  })
  .meta({ id: 'EventHook' });

/** One attempt to deliver an event to a hook (list_event_hook_attempts). */
export const hookAttemptSchema = z
  .strictObject({
    id: uuid,
    delivery_id: uuid.meta({ description: 'The message: its `webhook-id` header, the same on every attempt.' }),
    execution_id: uuid,
    event: z.enum(HOOK_EVENTS),
    attempt: z.number().int(),
    outcome: z.enum(['delivered', 'retrying', 'failed']),
    status_code: z.number().int().nullable(),
    error: z.string().nullable(),
    duration_ms: z.number().int(),
    at: timestamp,
  })
  .meta({ id: 'HookAttempt' });

/** A record of an NLP dataset (control-plane/sql/nlp-records.ts). */
export const nlpRecordSchema = z
  .strictObject({
    id: z.number().int().positive().meta({ description: "The record's position in the dataset, in upload order." }),
    text: z.string(),
    labels: z.array(z.string()),
    meta: z.record(z.string(), z.unknown()).nullable(),
    created_at: timestamp,
  })
  .meta({ id: 'NlpRecord' });

/** The nodes and edges of session graphs and graph blobs (shared/graph/graph-elements-sql.ts). */
export const graphNodeSchema = z
  .strictObject({
    id: z.string(),
    kind: z.literal('node'),
    label: z.string(),
    properties: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'GraphNode' });
export const graphEdgeSchema = z
  .strictObject({
    id: z.string(),
    kind: z.literal('edge'),
    label: z.string(),
    source: z.string(),
    target: z.string(),
    properties: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'GraphEdge' });
export const graphElementSchema = z.union([graphNodeSchema, graphEdgeSchema]);

/** What a graph mutation answers: the elements as stored, and the ids it removed. */
export const graphMutationResult = z.strictObject({
  elements: z.array(graphElementSchema),
  deleted: z.array(z.string()),
});

/** A session or execution event (shared/events/store.ts). */
export const eventSchema = z
  .strictObject({
    id: z.string().meta({ description: 'Increasing within its session.' }),
    kind: z.string(),
    at: timestamp,
    session_id: uuid,
    execution_id: uuid.nullable(),
    node: z.string().nullable(),
    attributes: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Event' });

/** The workflow records commands answer with (control-plane/workflow/session-ref.ts, sql/definitions.ts, shared/workflow/execution-record.ts). */
export const sessionSchema = z
  .strictObject({
    id: uuid,
    alias: z.string().nullable(),
    revision_id: uuid,
    status: z.enum(['active', 'deleting']),
    created_at: timestamp,
    held: z
      .record(z.string(), z.number().int().nonnegative())
      .optional()
      .meta({ description: 'get_session: limit id → how many the session holds.' }),
  })
  .meta({ id: 'Session' });

/**
 * How the API documents describe a workflow graph: its fields, the node's run policy included
 * (docs/workflow.md, "The graph format"). Documentation only: the request still takes any JSON
 * object as a graph, and validation answers each problem as an issue naming its node and field
 * (a stricter request schema would refuse them as `invalid_request_body` instead).
 */
const nodeDocument = z.toJSONSchema(
  z.object({
    processor: z.string(),
    config: z.record(z.string(), z.unknown()).optional(),
    routes: z.record(z.string(), z.string().nullable()).optional(),
    retry: retrySchema.optional(),
    timeout_seconds: timeoutSchema.optional(),
  }),
  { io: 'input', target: 'draft-2020-12' },
);
delete (nodeDocument as { $schema?: unknown }).$schema;

/** A workflow graph as the API documents show it (see nodeDocument). */
export function workflowGraphSchema(description: string) {
  return z.record(z.string(), z.unknown()).meta({
    description,
    properties: { start: { type: 'string' }, nodes: { type: 'object', additionalProperties: nodeDocument } },
  });
}

export const definitionSchema = z
  .strictObject({
    id: uuid,
    alias: z.string().nullable(),
    category: z.enum(['workflow', 'playground']),
    revision_id: uuid,
    graph: workflowGraphSchema('The workflow graph (docs/workflow.md).'),
    created_at: timestamp,
  })
  .meta({ id: 'Definition' });

export const graphIssueSchema = z
  .strictObject({
    code: z.string(),
    node: z.string().nullable(),
    field: z.string().nullable(),
    message: z.string(),
  })
  .meta({ id: 'GraphIssue' });

export const executionSchema = z
  .strictObject({
    id: uuid,
    session_id: uuid,
    definition_id: uuid,
    status: z.enum(['queued', 'running', 'sleeping', 'succeeded', 'failed', 'cancelled']),
    input_data: z.unknown(),
    output: z.unknown(),
    error: z.object({ code: z.string(), message: z.string(), limit: limitObjectSchema.optional() }).nullable(),
    created_at: timestamp,
    started_at: timestamp.nullable(),
    ended_at: timestamp.nullable(),
    node_runs: z.number().int().nonnegative(),
    limits: z.record(z.string(), z.unknown()).meta({ description: 'The run limits resolved at creation.' }),
    rerun_of: uuid
      .nullable()
      .meta({ description: 'The execution this one re-runs (rerun_execution); null otherwise.' }),
    rerun_by: uuid.nullable().meta({ description: 'The newest re-run of this execution; null when none.' }),
  })
  .meta({ id: 'Execution' });

/** A metadata listing (Get/Put Metadata). */
export const metadataFields = {
  alias: z.string(),
  entries: z.array(z.unknown()),
  updated_at: timestamp,
};

const limitEntrySchema = z
  .strictObject({
    id: z.string(),
    kind: z.enum(['quota', 'ceiling', 'entitlement', 'retention']),
    unit: z.enum(['count', 'bytes', 'seconds', 'days', 'flag', 'modules']),
    per: z.string(),
    default: limitValueSchema,
    value: limitValueSchema,
    source: z.enum(['default', ...OVERRIDE_LEVELS]),
    most_permissive: z.number().nullable(),
    set_on: z.array(z.enum(OVERRIDE_LEVELS)),
    held: z.number().int().nonnegative().optional(),
  })
  .meta({ id: 'LimitEntry' });

export const limitGroupSchema = z
  .strictObject({
    id: z.enum(LIMIT_GROUPS.map((group) => group.id) as [string, ...string[]]),
    label: z.string(),
    family: z.string(),
    limits: z.array(limitEntrySchema),
  })
  .meta({ id: 'LimitGroup' });

/** Sign-in and Refresh Token answers. */
export const tokenPairFields = {
  user: userSchema,
  access_token: z.string(),
  refresh_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int().meta({ description: 'Seconds until the access token expires.' }),
};
