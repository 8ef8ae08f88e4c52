/**
 * The egress policy: what the operator allows outside calls (the `http.request` processor,
 * `ctx.fetch` in `logic.code`, outgoing webhooks) to reach, and their ceilings. Built once from
 * configuration (`config.egress`); it holds no state, so every process builds its own.
 */
import { AddressExemptions } from './addresses.ts';

/** The egress settings of the configuration (docs/sandbox.md, "Outside calls"). */
export interface EgressSettings {
  /** CIDR ranges exempt from the forbidden address classes (`EGRESS_ALLOW_ADDRESSES`); none by default. */
  allowAddresses: string[];
  /** Per organization id, the only hosts its calls may reach (`EGRESS_ORG_HOSTS`); an organization not listed may call any host. */
  orgHosts: Record<string, string[]>;
  /** Outside calls of one organization in flight at once in one engine thread (`EGRESS_CALLS_PER_ORG`). */
  callsPerOrg: number;
  /** Outside calls in flight at once in one engine thread, all organizations together (`EGRESS_CALLS_PER_THREAD`). */
  callsPerThread: number;
  /** Ceiling of a response body, bytes (`EGRESS_RESPONSE_BYTES`); a call may ask for less. */
  maxResponseBytes: number;
  /** Ceiling of one call's duration, seconds (`EGRESS_TIMEOUT_SECONDS`); a call may ask for less. */
  maxTimeoutSeconds: number;
}

/** The defaults of docs/configuration.md. */
export const EGRESS_DEFAULTS: EgressSettings = {
  allowAddresses: [],
  orgHosts: {},
  callsPerOrg: 8,
  callsPerThread: 64,
  maxResponseBytes: 4 * 1024 * 1024,
  maxTimeoutSeconds: 30,
};

/** The methods an outside call may use (the definition format's `http.request` `method` too). */
export const EGRESS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type EgressMethod = (typeof EGRESS_METHODS)[number];

/** Most redirects one call follows. */
export const MAX_REDIRECTS = 5;

/** A host pattern of an allow-list: an exact host name or address, or `*.example.com` (subdomains only). */
function hostMatches(pattern: string, host: string): boolean {
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return host === pattern;
}

/** The policy in force, as `egressRequest` applies it. */
export interface EgressPolicy {
  readonly exemptions: AddressExemptions;
  readonly maxResponseBytes: number;
  readonly maxTimeoutMs: number;
  readonly callsPerOrg: number;
  readonly callsPerThread: number;
  /**
   * Whether `orgId` may call `host` (a lower-case host name, or an address without brackets);
   * true for an organization without an allow-list.
   */
  hostAllowed(orgId: string, host: string): boolean;
}

/** The policy of `settings`; throws on a malformed exemption range. */
export function createEgressPolicy(settings: EgressSettings = EGRESS_DEFAULTS): EgressPolicy {
  const orgHosts = new Map(
    Object.entries(settings.orgHosts).map(([org, hosts]) => [
      org.toLowerCase(),
      hosts.map((h) => h.toLowerCase().replace(/^\[|\]$/g, '')),
    ]),
  );
  return {
    exemptions: new AddressExemptions(settings.allowAddresses),
    maxResponseBytes: settings.maxResponseBytes,
    maxTimeoutMs: settings.maxTimeoutSeconds * 1000,
    callsPerOrg: settings.callsPerOrg,
    callsPerThread: settings.callsPerThread,
    hostAllowed(orgId, host) {
      const hosts = orgHosts.get(orgId.toLowerCase());
      return hosts === undefined || hosts.some((pattern) => hostMatches(pattern, host));
    },
  };
}

/**
 * Parses `EGRESS_ORG_HOSTS`: `<org id>=<host>,<host>;<org id>=<host>` (spaces ignored). Throws
 * naming the first malformed entry.
 */
export function parseOrgHosts(raw: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const entry of raw.split(';').map((e) => e.trim())) {
    if (entry === '') continue;
    const eq = entry.indexOf('=');
    const org = entry.slice(0, eq).trim().toLowerCase();
    const hosts = entry
      .slice(eq + 1)
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter((h) => h !== '');
    if (eq < 1 || !/^[0-9a-f-]{36}$/.test(org) || hosts.length === 0)
      throw new Error(`expected <organization id>=<host>[,<host>…], got ${entry}`);
    for (const host of hosts)
      if (!/^(\*\.)?[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/.test(host))
        throw new Error(`not a host name, *.domain or [IPv6 address]: ${host}`);
    out[org] = [...(out[org] ?? []), ...hosts];
  }
  return out;
}
