import type { z } from 'zod';
import { ServiceError } from './errors.ts';

/**
 * Parses `value` with `schema` or throws `invalid_request_body` naming the first problems.
 * Every edge (REST body, params, query, JSON-RPC params, GraphQL inputs) goes through here.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ServiceError('invalid_request_body', `Invalid ${where}: ${zodProblems(result.error, where)}`);
}

/**
 * The first five problems of a failed parse, `path: message` joined by '; ', a problem of the
 * value as a whole named `whole` (the wording of every refusal and of the tests' schema checks).
 */
export function zodProblems(error: z.ZodError, whole: string): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : whole}: ${issue.message}`)
    .join('; ');
}
