/**
 * The error of a refused or failed outside call. It crosses thread and process boundaries as
 * `{code, message}` (a node error); `reason` says precisely why, for code that handles it.
 */

/** The node error codes of outside calls (docs/errors.md, "Codes that are not HTTP errors"). */
export const EGRESS_CODES = ['egress_refused', 'egress_failed', 'egress_timeout', 'egress_response_too_large'] as const;
export type EgressCode = (typeof EGRESS_CODES)[number];

/**
 * Why: an address class (`loopback`, `private`, `link_local`, `cloud_metadata`, `multicast`,
 * `reserved`, `unspecified`), or `host_not_allowed`, `invalid_url`, `scheme`, `forbidden_header`,
 * `invalid_request`, `too_many_redirects`, `redirect` (a redirect with `redirect: 'error'`),
 * `dns`, `connect`, `timeout`, `response_too_large`, `aborted`.
 */
export type EgressReason = string;

export class EgressError extends Error {
  readonly code: EgressCode;
  readonly reason: EgressReason;

  constructor(code: EgressCode, reason: EgressReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EgressError';
    this.code = code;
    this.reason = reason;
  }
}
