/**
 * The limits catalog (docs/limits.md, "Catalog"), transcribed as data. This table is the
 * only place a default, a most permissive value or a Set-on list is written; everything else
 * (resolution, refusals, the limits routes, the ops API, docs/limits.md through its test) reads it.
 */

/** How a limit is measured (docs/limits.md, "Catalog"). */
export type LimitKind = 'quota' | 'ceiling' | 'entitlement' | 'retention';
export type LimitUnit = 'count' | 'bytes' | 'seconds' | 'days' | 'flag' | 'modules';

/** The levels an operator can set an override on, farthest first: the blob's override wins. */
export const OVERRIDE_LEVELS = ['user', 'org', 'blob'] as const;
export type OverrideLevel = (typeof OVERRIDE_LEVELS)[number];

/** A value a limit can take: a count or size, a flag, a module list, or `null` (retention: forever). */
export type LimitValue = number | boolean | readonly string[] | null;

/**
 * The catalog groups in their fixed order. A type group's id is the blob type string, and its
 * family is the prefix of its limit ids.
 */
export const LIMIT_GROUPS = [
  { id: 'platform', label: 'Global', family: 'platform' },
  { id: 'svc.compute.workflow', label: 'Workflow', family: 'workflow' },
  { id: 'svc.compute.scheduler', label: 'Scheduler', family: 'scheduler' },
  { id: 'svc.model.onnx', label: 'ONNX Model', family: 'onnx' },
  { id: 'svc.graph.graphdb', label: 'Graph', family: 'graphdb' },
  { id: 'svc.dataset.nlp', label: 'NLP Dataset', family: 'nlp' },
] as const satisfies readonly { id: string; label: string; family: string }[];

export type LimitGroup = (typeof LIMIT_GROUPS)[number];
export type LimitGroupId = LimitGroup['id'];
/** The groups of blob types: every group but `platform`. */
export type TypeGroupId = Exclude<LimitGroupId, 'platform'>;

/** One catalog entry. Field names are those of the limits-route reply (docs/limits.md, "Limits reads"). */
export interface LimitSpec {
  readonly id: string;
  readonly group: LimitGroupId;
  readonly kind: LimitKind;
  readonly unit: LimitUnit;
  /** The one thing the limit applies to; for a quota, also its holder. */
  readonly per: string;
  readonly default: LimitValue;
  /** The bound no override may pass; `null` when the platform sets none (`-` in the catalog). */
  readonly most_permissive: number | null;
  /**
   * Which way is more permissive for a numeric limit: `higher` for nearly all of them, `lower`
   * for `scheduler.min_interval_seconds`. `null` for flags and lists, which have no bound.
   */
  readonly more_permissive: 'higher' | 'lower' | null;
  /** Levels an override may be set on; empty means `fixed` (the same for every account). */
  readonly set_on: readonly OverrideLevel[];
}

const ALL = ['user', 'org', 'blob'] as const;
const USER_ORG = ['user', 'org'] as const;
const FIXED = [] as const;

/** Every limit, in catalog order. */
export const LIMIT_CATALOG = [
  // Global
  {
    id: 'platform.orgs_per_user',
    group: 'platform',
    kind: 'quota',
    unit: 'count',
    per: 'user',
    default: 1,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ['user'],
  },
  {
    id: 'platform.blobs_per_org',
    group: 'platform',
    kind: 'quota',
    unit: 'count',
    per: 'org',
    default: 3,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: USER_ORG,
  },
  {
    id: 'platform.revisions_per_blob',
    group: 'platform',
    kind: 'quota',
    unit: 'count',
    per: 'blob',
    default: 2,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },

  // Workflow
  {
    id: 'workflow.enabled',
    group: 'svc.compute.workflow',
    kind: 'entitlement',
    unit: 'flag',
    per: 'org',
    default: true,
    most_permissive: null,
    more_permissive: null,
    set_on: USER_ORG,
  },
  {
    id: 'workflow.definitions_per_revision',
    group: 'svc.compute.workflow',
    kind: 'quota',
    unit: 'count',
    per: 'revision',
    default: 10,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.playgrounds_per_revision',
    group: 'svc.compute.workflow',
    kind: 'quota',
    unit: 'count',
    per: 'revision',
    default: 10,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.sessions_per_revision',
    group: 'svc.compute.workflow',
    kind: 'quota',
    unit: 'count',
    per: 'revision',
    default: 30,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.executions_per_session',
    group: 'svc.compute.workflow',
    kind: 'quota',
    unit: 'count',
    per: 'session',
    default: 1_000,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.running_executions_per_org',
    group: 'svc.compute.workflow',
    kind: 'quota',
    unit: 'count',
    per: 'org',
    default: 10,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: USER_ORG,
  },
  {
    id: 'workflow.session_objects_per_session',
    group: 'svc.compute.workflow',
    kind: 'quota',
    unit: 'count',
    per: 'session',
    default: 1_000,
    most_permissive: 10_000,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.processor_runs_per_execution',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'count',
    per: 'execution',
    default: 1_000,
    most_permissive: 1_000,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.execution_seconds',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'seconds',
    per: 'execution',
    default: 86_400,
    most_permissive: 86_400,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.code_run_seconds',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'seconds',
    per: 'node',
    default: 870,
    most_permissive: 870,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.code_imports',
    group: 'svc.compute.workflow',
    kind: 'entitlement',
    unit: 'modules',
    per: 'execution',
    default: [],
    most_permissive: null,
    more_permissive: null,
    set_on: ALL,
  },
  {
    id: 'workflow.execution_retention_days',
    group: 'svc.compute.workflow',
    kind: 'retention',
    unit: 'days',
    per: 'execution',
    default: 90,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },
  {
    id: 'workflow.execution_input_bytes',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'bytes',
    per: 'execution',
    default: 65_536,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.session_object_bytes',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'bytes',
    per: 'write',
    default: 5_242_880,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.session_file_bytes',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'bytes',
    per: 'write',
    default: 4_194_304,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.thread_item_bytes',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'bytes',
    per: 'write',
    default: 65_536,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.thread_item_files',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'count',
    per: 'write',
    default: 10,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.graph_element_bytes',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'bytes',
    per: 'write',
    default: 65_536,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.graph_mutations_per_call',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'count',
    per: 'call',
    default: 40,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.graph_query_depth',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'count',
    per: 'query',
    default: 10,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.graph_query_fanout',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'count',
    per: 'query',
    default: 1_000,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.graph_query_results',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'count',
    per: 'query',
    default: 1_000,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.graph_query_elements',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'count',
    per: 'query',
    default: 5_000,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },
  {
    id: 'workflow.sleep_seconds',
    group: 'svc.compute.workflow',
    kind: 'ceiling',
    unit: 'seconds',
    per: 'node',
    default: 43_200,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },

  // Scheduler
  {
    id: 'scheduler.enabled',
    group: 'svc.compute.scheduler',
    kind: 'entitlement',
    unit: 'flag',
    per: 'org',
    default: true,
    most_permissive: null,
    more_permissive: null,
    set_on: USER_ORG,
  },
  {
    id: 'scheduler.schedules_per_revision',
    group: 'svc.compute.scheduler',
    kind: 'quota',
    unit: 'count',
    per: 'revision',
    default: 10,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },
  // Less is more permissive here: an override can only raise the gap between fires.
  {
    id: 'scheduler.min_interval_seconds',
    group: 'svc.compute.scheduler',
    kind: 'ceiling',
    unit: 'seconds',
    per: 'schedule',
    default: 60,
    most_permissive: 60,
    more_permissive: 'lower',
    set_on: ALL,
  },
  {
    id: 'scheduler.run_retention_days',
    group: 'svc.compute.scheduler',
    kind: 'retention',
    unit: 'days',
    per: 'run',
    default: 30,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },

  // ONNX Model
  {
    id: 'onnx.enabled',
    group: 'svc.model.onnx',
    kind: 'entitlement',
    unit: 'flag',
    per: 'org',
    default: true,
    most_permissive: null,
    more_permissive: null,
    set_on: USER_ORG,
  },
  {
    id: 'onnx.model_bytes',
    group: 'svc.model.onnx',
    kind: 'ceiling',
    unit: 'bytes',
    per: 'upload',
    default: 524_288_000,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: ALL,
  },

  // Graph
  {
    id: 'graphdb.enabled',
    group: 'svc.graph.graphdb',
    kind: 'entitlement',
    unit: 'flag',
    per: 'org',
    default: false,
    most_permissive: null,
    more_permissive: null,
    set_on: USER_ORG,
  },
  {
    id: 'graphdb.query_results',
    group: 'svc.graph.graphdb',
    kind: 'ceiling',
    unit: 'count',
    per: 'query',
    default: 50,
    most_permissive: null,
    more_permissive: 'higher',
    set_on: FIXED,
  },

  // NLP Dataset
  {
    id: 'nlp.enabled',
    group: 'svc.dataset.nlp',
    kind: 'entitlement',
    unit: 'flag',
    per: 'org',
    default: false,
    most_permissive: null,
    more_permissive: null,
    set_on: USER_ORG,
  },
] as const satisfies readonly LimitSpec[];

// The table is shared by every request: freezing it (defaults and Set-on lists included) turns an
// accidental mutation of a resolved list into a TypeError instead of a change for every account.
for (const limit of LIMIT_CATALOG) {
  Object.freeze(limit.default);
  Object.freeze(limit.set_on);
  Object.freeze(limit);
}
Object.freeze(LIMIT_CATALOG);
for (const group of LIMIT_GROUPS) Object.freeze(group);
Object.freeze(LIMIT_GROUPS);

export type CatalogEntry = (typeof LIMIT_CATALOG)[number];
export type LimitId = CatalogEntry['id'];
export type LimitEntryOf<I extends LimitId> = Extract<CatalogEntry, { id: I }>;

/** The type of the value in force of limit `I` (a count, a flag, a module list, or days|null). */
export type LimitValueOf<I extends LimitId> = ValueOfEntry<LimitEntryOf<I>>;
type ValueOfEntry<E> = E extends { kind: 'quota' | 'ceiling' }
  ? number
  : E extends { kind: 'retention' }
    ? number | null
    : E extends { unit: 'modules' }
      ? readonly string[]
      : boolean;

/** Ids of the quotas a given kind of record holds (a quota's holder is its `per`). */
export type QuotaIdHeldBy<P extends string> = Extract<CatalogEntry, { kind: 'quota'; per: P }>['id'];

const BY_ID: ReadonlyMap<string, CatalogEntry> = new Map(LIMIT_CATALOG.map((limit) => [limit.id, limit]));

/** True when `id` names a limit of the catalog. */
export function isLimitId(id: string): id is LimitId {
  return BY_ID.has(id);
}

/** The catalog entry of `id`; `undefined` for a string that names no limit. */
export function limitById<I extends LimitId>(id: I): LimitEntryOf<I>;
export function limitById(id: string): CatalogEntry | undefined;
export function limitById(id: string): CatalogEntry | undefined {
  return BY_ID.get(id);
}

/** The catalog default of `id`. */
export function defaultOf<I extends LimitId>(id: I): LimitValueOf<I> {
  return (BY_ID.get(id) as CatalogEntry).default as LimitValueOf<I>;
}

/** True when no override can change `id` (`fixed` in the catalog). */
export function isFixed(id: LimitId): boolean {
  return limitById(id).set_on.length === 0;
}

/** The group of `id` (`platform` or a blob type's group). */
export function groupById(id: LimitGroupId): LimitGroup;
export function groupById(id: string): LimitGroup | undefined;
export function groupById(id: string): LimitGroup | undefined {
  return LIMIT_GROUPS.find((group) => group.id === id);
}

/** True when `id` is the group of a blob type, that is, a blob type string. */
export function isTypeGroupId(id: string): id is TypeGroupId {
  return id !== 'platform' && groupById(id) !== undefined;
}

/** The limits of one group, in catalog order. */
export function limitsOfGroup(group: LimitGroupId): CatalogEntry[] {
  return LIMIT_CATALOG.filter((limit) => limit.group === group);
}

/** The `<family>.enabled` entitlement that gates creating blobs of `type`. */
export function enabledLimitOf(type: TypeGroupId): LimitId {
  return `${groupById(type).family}.enabled` as LimitId;
}
