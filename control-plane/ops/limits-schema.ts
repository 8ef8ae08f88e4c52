import { Kind, type ValueNode } from 'graphql';
import mercurius, { type MercuriusContext } from 'mercurius';
import { z } from 'zod';
import { isUuid } from '../../shared/ids.ts';
import {
  LIMIT_CATALOG,
  LIMIT_GROUPS,
  type CatalogEntry,
  type LimitEntry,
  type OverrideLevel,
} from '../../shared/limits/index.ts';
import { validateOverride } from '../../shared/limits/overrides.ts';
import {
  clearLimitOverride,
  findOverrideTarget,
  listOverrideChanges,
  listOverrides,
  setLimitOverride,
  type FoundTarget,
  type OverrideChange,
  type OverrideWriteResult,
  type StoredOverride,
} from '../../shared/limits/write-overrides.ts';
import { limitsRead } from '../limits/reads.ts';
import { parseArgs } from './arguments.ts';
import type { OpsContext, OpsModule } from './ops-module.ts';

/** Listing bounds of `limitOverrides` and `limitOverrideChanges`. */
const LIMITS_LIST_DEFAULT = 100;
const LIMITS_LIST_MAX = 500;

/** The header naming the person behind an ops request; recorded as `ops:<value>`. */
const OPS_ACTOR_HEADER = 'x-ops-actor';

const ref = z.string().min(1).max(200);
const level = z.enum(['user', 'org', 'blob']);
const listLimit = z.number().int().min(1).max(LIMITS_LIST_MAX).nullish();
const writeArgs = z.strictObject({ limitId: ref, targetType: level, targetId: ref, value: z.unknown().optional() });
const clearArgs = z.strictObject({ limitId: ref, targetType: level, targetId: ref });
const inForceArgs = z.strictObject({ targetType: level, targetId: ref });
const overridesArgs = z.strictObject({
  limitId: ref.nullish(),
  targetType: level.nullish(),
  targetId: ref.nullish(),
  limit: listLimit,
});
const changesArgs = overridesArgs.extend({
  beforeId: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/, 'must be a change id')
    .nullish(),
});
// Printable, one line: it goes into the history as is.
// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const PRINTABLE = /^[^\x00-\x1f\x7f]+$/;
const actorHeader = z.string().trim().min(1).max(100).regex(PRINTABLE, 'must be printable');

/**
 * Who the change is recorded as. There is one ops token, so the token says only "the operator";
 * `X-Ops-Actor` (optional) names the person or tool behind it: `ops:<name>`, else `ops`.
 */
function actorOf(context: MercuriusContext): string {
  const header = context.reply.request.headers[OPS_ACTOR_HEADER];
  if (header === undefined) return 'ops';
  const parsed = actorHeader.safeParse(Array.isArray(header) ? header.join(',') : header);
  if (!parsed.success)
    throw new mercurius.ErrorWithProps(`${OPS_ACTOR_HEADER}: ${parsed.error.issues[0]!.message}`, {
      code: 'invalid_argument',
    });
  return `ops:${parsed.data}`;
}

// A limit value is JSON: an integer, a flag, a list of module names, or null. Literals are turned
// into plain values and checked by validateOverride, so a wrong type is `invalid_value_type`
// rather than a GraphQL validation error.
function literal(node: ValueNode, variables: Record<string, unknown> | null | undefined): unknown {
  switch (node.kind) {
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.STRING:
    case Kind.ENUM:
      return node.value;
    case Kind.BOOLEAN:
      return node.value;
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((value) => literal(value, variables));
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((field) => [field.name.value, literal(field.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[node.name.value];
  }
}

function refused(result: Extract<OverrideWriteResult, { ok: false }>): Error {
  return new mercurius.ErrorWithProps(result.message, { code: result.code });
}

/** The UUID a listing filter names: a UUID as is (history outlives its targets), an alias looked up. */
async function filterTargetId(
  ctx: OpsContext,
  targetType: OverrideLevel | null | undefined,
  targetId: string | null | undefined,
): Promise<string | undefined> {
  if (targetId === null || targetId === undefined) return undefined;
  if (isUuid(targetId)) return targetId;
  if (!targetType)
    throw new mercurius.ErrorWithProps('targetId as an alias needs targetType.', { code: 'invalid_argument' });
  const target = await findOverrideTarget(ctx.db, targetType, targetId);
  if (!target) throw notFound(targetType, targetId);
  return target.id;
}

function notFound(targetType: OverrideLevel, targetId: string): Error {
  const what = { user: 'user', org: 'organization', blob: 'blob' }[targetType];
  return new mercurius.ErrorWithProps(`No ${what} has the id or alias ${JSON.stringify(targetId)}.`, {
    code: 'not_found',
  });
}

function catalogEntry(limit: CatalogEntry) {
  return {
    id: limit.id,
    kind: limit.kind,
    unit: limit.unit,
    per: limit.per,
    default: limit.default,
    mostPermissive: limit.most_permissive,
    morePermissive: limit.more_permissive,
    setOn: [...limit.set_on],
    fixed: limit.set_on.length === 0,
  };
}

function entryInForce(entry: LimitEntry) {
  return {
    id: entry.id,
    kind: entry.kind,
    unit: entry.unit,
    per: entry.per,
    default: entry.default,
    value: entry.value,
    source: entry.source,
    mostPermissive: entry.most_permissive,
    setOn: entry.set_on,
    held: entry.held ?? null,
  };
}

function override(row: StoredOverride) {
  const check = validateOverride(row.limitId, row.targetType, row.value);
  return { ...row, problem: check.ok ? null : check.code };
}

function change(row: OverrideChange) {
  return {
    ...row,
    hadOverride: row.oldValue !== undefined,
    oldValue: row.oldValue ?? null,
    newValue: row.newValue ?? null,
  };
}

function written(result: OverrideWriteResult) {
  if (!result.ok) throw refused(result);
  return {
    override: result.override && override(result.override),
    previous: result.previous && override(result.previous),
    change: result.change && change(result.change),
  };
}

function inForceTarget(target: FoundTarget) {
  return {
    targetType: target.targetType,
    targetId: target.id,
    alias: target.alias,
    blobType: target.blobType ?? null,
    ...target.chain,
  };
}

/**
 * Limits in the operations API (docs/limits.md, "The operations API (GraphQL)"): the catalog, the
 * values in force for any user, organization or blob, the overrides and their history, and the only
 * way to set or clear one.
 */
export const limitsOpsModule: OpsModule = {
  typeDefs: /* GraphQL */ `
    """
    A limit's value as JSON: an integer, true/false, a list of module names, or null (retention:
    kept forever). Any JSON is accepted as input; validation says whether the limit takes it.
    """
    scalar LimitValue

    "The levels an override can be set on: the owner of an organization, an organization, a blob."
    enum LimitTargetType { user org blob }

    extend type Query {
      "The limits catalog: groups in their fixed order, limits in catalog order."
      limitCatalog: [LimitCatalogGroup!]!
      """
      The values in force for a user (as Get User Limits shows them: what a new organization of the
      user starts with), an organization or a blob (as their limits routes show them), with the
      source of each and held on the quotas the target holds. targetId: id or alias.
      """
      limitsInForce(targetType: LimitTargetType!, targetId: String!): LimitsInForce!
      """
      Stored overrides, most recently set first. Filters combine with AND; targetId is an id, or
      an alias with targetType. limit: 1..${LIMITS_LIST_MAX}, default ${LIMITS_LIST_DEFAULT}.
      """
      limitOverrides(limitId: String, targetType: LimitTargetType, targetId: String, limit: Int): [LimitOverride!]!
      """
      Every set and clear, newest first. Filters as for limitOverrides (a UUID finds the history of
      a deleted target too); page on with beforeId set to the last change's id.
      """
      limitOverrideChanges(limitId: String, targetType: LimitTargetType, targetId: String, limit: Int, beforeId: ID): [LimitOverrideChange!]!
    }

    extend type Mutation {
      """
      Sets an override; the next request of the target (and of everything below it) uses it.
      Refusals (extensions.code): unknown_limit, fixed_limit, level_not_allowed,
      invalid_value_type, past_most_permissive, not_found. value is required (null is a value).
      """
      setLimitOverride(limitId: String!, targetType: LimitTargetType!, targetId: String!, value: LimitValue): LimitOverrideWrite
      """
      Clears an override (even one the catalog would refuse today). Clearing what is not set
      changes and records nothing: override, previous and change are then null.
      """
      clearLimitOverride(limitId: String!, targetType: LimitTargetType!, targetId: String!): LimitOverrideWrite
    }

    type LimitCatalogGroup {
      "platform, or a blob type string."
      id: String!
      label: String!
      family: String!
      limits: [LimitCatalogEntry!]!
    }

    type LimitCatalogEntry {
      id: String!
      "quota, ceiling, entitlement or retention."
      kind: String!
      unit: String!
      per: String!
      default: LimitValue
      "The bound no override may pass; null when the platform sets none."
      mostPermissive: Int
      "higher or lower (scheduler.min_interval_seconds); null for flags and lists."
      morePermissive: String
      "Empty for a fixed limit."
      setOn: [LimitTargetType!]!
      fixed: Boolean!
    }

    type LimitsInForce {
      targetType: LimitTargetType!
      targetId: ID!
      alias: String
      "The blob's type (blobs only)."
      blobType: String
      "The ownership chain as it is now: whose overrides apply."
      userId: ID!
      orgId: ID
      blobId: ID
      groups: [LimitGroupInForce!]!
    }

    type LimitGroupInForce {
      id: String!
      label: String!
      family: String!
      limits: [LimitInForce!]!
    }

    type LimitInForce {
      id: String!
      kind: String!
      unit: String!
      per: String!
      default: LimitValue
      value: LimitValue
      "default, user, org or blob."
      source: String!
      mostPermissive: Int
      setOn: [LimitTargetType!]!
      "How many the target holds, on the quotas it holds."
      held: Int
    }

    type LimitOverride {
      limitId: String!
      targetType: LimitTargetType!
      targetId: ID!
      value: LimitValue
      setBy: String!
      setAt: String!
      """
      Null when the stored value would be accepted today. Otherwise the refusal code it would get
      (after a catalog change or a hand-written row): resolution clamps a past_most_permissive
      value to the bound and ignores any other; clear it or set it again.
      """
      problem: String
    }

    type LimitOverrideChange {
      id: ID!
      limitId: String!
      targetType: LimitTargetType!
      targetId: ID!
      "set or clear."
      action: String!
      "False when no override was stored before (oldValue is then null without being a value)."
      hadOverride: Boolean!
      oldValue: LimitValue
      "The value set; null for a clear."
      newValue: LimitValue
      "ops, or ops:<X-Ops-Actor>."
      changedBy: String!
      changedAt: String!
    }

    type LimitOverrideWrite {
      "What is stored now; null after a clear."
      override: LimitOverride
      "What was stored before; null when nothing was."
      previous: LimitOverride
      "The history row written; null when a clear found nothing to clear."
      change: LimitOverrideChange
    }
  `,
  resolvers: (ctx) => ({
    LimitValue: {
      serialize: (value: unknown) => value,
      parseValue: (value: unknown) => value,
      parseLiteral: (node: ValueNode, variables?: Record<string, unknown> | null) => literal(node, variables),
    },
    Query: {
      limitCatalog: () =>
        LIMIT_GROUPS.map((group) => ({
          ...group,
          limits: LIMIT_CATALOG.filter((limit) => limit.group === group.id).map(catalogEntry),
        })),
      limitsInForce: async (_root: unknown, args: Record<string, unknown>) => {
        const a = parseArgs(inForceArgs, args);
        const target = await findOverrideTarget(ctx.db, a.targetType, a.targetId);
        if (!target) throw notFound(a.targetType, a.targetId);
        const groups = await limitsRead(
          ctx.db,
          target.targetType === 'blob'
            ? { targetType: 'blob', id: target.id, blobType: target.blobType! }
            : { targetType: target.targetType, id: target.id },
        );
        return {
          ...inForceTarget(target),
          groups: groups.map((group) => ({ ...group, limits: group.limits.map(entryInForce) })),
        };
      },
      limitOverrides: async (_root: unknown, args: Record<string, unknown>) => {
        const a = parseArgs(overridesArgs, args);
        const targetId = await filterTargetId(ctx, a.targetType, a.targetId);
        const rows = await listOverrides(
          ctx.db,
          {
            limitId: a.limitId ?? undefined,
            targetType: a.targetType ?? undefined,
            targetId,
          },
          a.limit ?? LIMITS_LIST_DEFAULT,
        );
        return rows.map(override);
      },
      limitOverrideChanges: async (_root: unknown, args: Record<string, unknown>) => {
        const a = parseArgs(changesArgs, args);
        const targetId = await filterTargetId(ctx, a.targetType, a.targetId);
        const rows = await listOverrideChanges(
          ctx.db,
          {
            limitId: a.limitId ?? undefined,
            targetType: a.targetType ?? undefined,
            targetId,
            beforeId: a.beforeId ? Number(a.beforeId) : undefined,
          },
          a.limit ?? LIMITS_LIST_DEFAULT,
        );
        return rows.map(change);
      },
    },
    Mutation: {
      setLimitOverride: async (_root: unknown, args: Record<string, unknown>, context: MercuriusContext) => {
        const a = parseArgs(writeArgs, args);
        // An omitted value is not null: null is a value (retention kept forever), so say so.
        if (!Object.hasOwn(args, 'value')) {
          throw new mercurius.ErrorWithProps('value is required; send null to keep a retention forever.', {
            code: 'invalid_value_type',
          });
        }
        const actor = actorOf(context);
        return written(await ctx.db.transaction((tx) => setLimitOverride(tx, { ...a, value: a.value, actor })));
      },
      clearLimitOverride: async (_root: unknown, args: Record<string, unknown>, context: MercuriusContext) => {
        const a = parseArgs(clearArgs, args);
        const actor = actorOf(context);
        return written(await ctx.db.transaction((tx) => clearLimitOverride(tx, { ...a, actor })));
      },
    },
  }),
};
