import mercurius from 'mercurius';
import type { z } from 'zod';

/**
 * The GraphQL error for arguments that fail their zod schema: its first issue, prefixed with the
 * argument's path, and `extensions.code` `invalid_argument`.
 */
function argumentError(error: z.ZodError): Error {
  const issue = error.issues[0]!;
  return new mercurius.ErrorWithProps(`${issue.path.join('.') || 'arguments'}: ${issue.message}`, {
    code: 'invalid_argument',
  });
}

/** A resolver's `args` parsed by `schema`, or `argumentError` thrown. */
export function parseArgs<S extends z.ZodType>(schema: S, args: unknown): z.infer<S> {
  const parsed = schema.safeParse(args);
  if (!parsed.success) throw argumentError(parsed.error);
  return parsed.data;
}
