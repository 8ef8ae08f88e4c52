import { z } from 'zod';
import { UUID_RE } from '../../shared/ids.ts';
import { AUDIT_LIST_MAX, listAuditEntries, type AuditEntry } from '../audit/audit-log.ts';
import { parseArgs } from './arguments.ts';
import type { OpsModule } from './ops-module.ts';

const uuid = z.string().regex(UUID_RE, 'must be a lower-case UUID');
const auditLogArgs = z.strictObject({
  limit: z.number().int().min(1).max(AUDIT_LIST_MAX).nullish(),
  actorId: uuid.nullish(),
  humanId: uuid.nullish(),
  operation: z.string().min(1).max(200).nullish(),
  beforeId: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/, 'must be an entry id')
    .nullish(),
});

function entry(row: AuditEntry) {
  return {
    id: String(row.id),
    at: row.at,
    requestId: row.request_id,
    actorId: row.actor_id,
    humanId: row.human_id,
    credential: row.credential,
    apiKeyId: row.api_key_id,
    operation: row.operation,
    method: row.method,
    route: row.route,
    targetType: row.target_type,
    targetId: row.target_id,
    outcome: row.outcome,
    error: row.error,
    status: row.status,
  };
}

/** The audit log in the operations API: `auditLog(limit, actorId, ...)`, newest first. */
export const auditOpsModule: OpsModule = {
  typeDefs: /* GraphQL */ `
    extend type Query {
      """
      Perimeter operations and acting-token requests, newest first. Filters combine with AND;
      page on with beforeId set to the last entry's id. limit: 1..${AUDIT_LIST_MAX}, default 100.
      """
      auditLog(limit: Int, actorId: ID, humanId: ID, operation: String, beforeId: ID): [AuditEntry!]!
    }

    type AuditEntry {
      id: ID!
      at: String!
      requestId: String!
      "The account the request acted as."
      actorId: ID!
      "The human behind the request; null for a service account using its own key."
      humanId: ID
      "bearer, acting or api_key."
      credential: String!
      apiKeyId: ID
      "A perimeter operation (e.g. api_key.mint) or, for other acting-token requests, METHOD /route."
      operation: String!
      method: String!
      route: String!
      targetType: String
      targetId: String
      "allowed or refused."
      outcome: String!
      "The refusal's error code."
      error: String
      status: Int!
    }
  `,
  resolvers: (ctx) => ({
    Query: {
      auditLog: async (_root: unknown, args: Record<string, unknown>) => {
        const a = parseArgs(auditLogArgs, args);
        const rows = await listAuditEntries(ctx.db, {
          limit: a.limit ?? undefined,
          actorId: a.actorId ?? undefined,
          humanId: a.humanId ?? undefined,
          operation: a.operation ?? undefined,
          beforeId: a.beforeId ? Number(a.beforeId) : undefined,
        });
        return rows.map(entry);
      },
    },
  }),
};
