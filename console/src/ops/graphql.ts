/**
 * The operator's console's one way to the service: POST /graphql on the ops port (its own origin),
 * every request carrying `Authorization: Bearer <OPS_TOKEN>` and, when the operator gave a name,
 * `X-Ops-Actor` (the limit-override history records it as `ops:<name>`).
 */

/** A refusal of the operations API: its `extensions.code` and message (HTTP status when no body said). */
export class OpsError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'OpsError';
    this.code = code;
  }
}

export interface OpsCredential {
  token: string;
  /** Recorded with override changes as `ops:<actor>`; empty: `ops`. */
  actor: string;
}

/** Runs one GraphQL operation; its `data`, or an OpsError with the first error's code. */
export async function opsQuery<T>(
  credential: OpsCredential,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<T> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    authorization: `Bearer ${credential.token}`,
  };
  if (credential.actor.trim()) headers['x-ops-actor'] = credential.actor.trim();
  let response: Response;
  try {
    response = await fetch('/graphql', { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  } catch (caught) {
    throw new OpsError('connection', `The connection to the service failed: ${(caught as Error).message}`);
  }
  const body = (await response.json().catch(() => null)) as {
    data?: T | null;
    errors?: Array<{ message: string; extensions?: { code?: string } }>;
  } | null;
  const first = body?.errors?.[0];
  if (first) throw new OpsError(first.extensions?.code ?? `http_${response.status}`, first.message);
  if (!response.ok || !body?.data)
    throw new OpsError(`http_${response.status}`, `The service answered ${response.status}.`);
  return body.data;
}
