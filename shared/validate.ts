import type { z } from 'zod';
import { ServiceError } from './errors.ts';

/**
 * Parses `value` with `schema` or throws `invalid_request_body` naming the first problems.
 * Every edge (REST body, params, query, JSON-RPC params, GraphQL inputs) goes through here.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.slice(0, 5).map((issue) => {
    const path = issue.path.length > 0 ? issue.path.join('.') : where;
    return `${path}: ${issue.message}`;
  });
  throw new ServiceError('invalid_request_body', `Invalid ${where}: ${problems.join('; ')}`);
}
