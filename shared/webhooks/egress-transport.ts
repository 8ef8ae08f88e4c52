import { egressRequest, type EgressOptions } from '../egress/request.ts';
import type { HookTransport } from './transport.ts';

/**
 * Deliveries through the egress module (shared/egress/request.ts): the operator's policy on the
 * address actually connected to, bounded time and answer bytes. Redirects are answered, never
 * followed: a 3xx is a failed attempt, so a receiver cannot bounce a delivery elsewhere.
 */
export function egressTransport(options: EgressOptions): HookTransport {
  return async (request) => {
    const answer = await egressRequest(
      {
        url: request.url,
        method: request.method,
        headers: request.headers,
        body: request.body,
        timeoutMs: request.timeoutMs,
        maxResponseBytes: request.maxResponseBytes,
        orgId: request.orgId,
        redirect: 'manual',
      },
      options,
    );
    return { status: answer.status };
  };
}
