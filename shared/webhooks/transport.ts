/**
 * How a delivery leaves the runner: one POST, bounded in time and in the bytes of the answer read,
 * to the address the operator's egress policy allows. The runner passes the egress module's
 * guarded request (shared/egress/); tests pass the same with loopback allowed by an explicit
 * setting. A refusal or a failure throws; any answer, whatever its status, resolves.
 */
interface HookRequest {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  maxResponseBytes: number;
  /** The organization the delivery is for: the egress policy's per-organization rules and bounds. */
  orgId: string;
}

interface HookResponse {
  status: number;
}

export type HookTransport = (request: HookRequest) => Promise<HookResponse>;
