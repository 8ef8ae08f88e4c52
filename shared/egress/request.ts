/**
 * `egressRequest`: the one way this service calls the outside. Every hop of a call (the first
 * URL and each redirect) is checked by the policy before a socket opens: the scheme, the
 * organization's host allow-list, and every address the host name resolves to. The connection
 * then goes to the checked address itself, never to a name resolved again, so a DNS answer that
 * changes between check and connect (rebinding) cannot move it.
 *
 * The seam (docs/sandbox.md, "Outside calls"): `resolver` turns a host name into addresses and
 * `connect` opens the socket to one checked address. Tests pass a resolver answering the
 * addresses under test and a connect step that refuses anything but loopback, so a broken policy
 * fails the test without a packet leaving the machine.
 */
import { lookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { forbiddenClass, parseIp, type IpAddress } from './addresses.ts';
import { EgressError } from './egress-error.ts';
import type { EgressGate } from './gate.ts';
import { EGRESS_METHODS, MAX_REDIRECTS, type EgressMethod, type EgressPolicy } from './policy.ts';

/** One outside call. */
export interface EgressRequest {
  url: string;
  /** Default GET. */
  method?: EgressMethod;
  headers?: Record<string, string>;
  /** Not with GET or HEAD. */
  body?: string | Uint8Array;
  /** Whole call (waiting for a slot, DNS, connect, every redirect, the body); capped by the policy. */
  timeoutMs?: number;
  /** Response body bound; capped by the policy. */
  maxResponseBytes?: number;
  /** Whose call it is: the allow-list and the concurrency bound are the organization's. */
  orgId: string;
  /** `follow` (default) up to 5 redirects, each checked like the first URL; `manual` answers the 3xx; `error` refuses it. */
  redirect?: 'follow' | 'manual' | 'error';
  /** Aborts the call (a cancelled execution). */
  signal?: AbortSignal;
}

/** The answer: any status (the caller decides which it expects), headers lower-cased, the whole bounded body. */
export interface EgressResponse {
  status: number;
  statusText: string;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
  redirected: boolean;
}

/** Resolves a host name to its addresses (the seam's first half). */
export type EgressResolver = (hostname: string) => Promise<IpAddress[]>;

/** Where a checked call connects. */
interface EgressTarget {
  /** The checked IP address: the only place the socket may go. */
  address: string;
  family: 4 | 6;
  port: number;
  tls: boolean;
  /** The host name for TLS (SNI and certificate check); absent for an address URL. */
  servername?: string;
}

/** Opens the socket to a checked address (the seam's second half); called only after the policy allowed it. */
export type EgressConnect = (target: EgressTarget) => Duplex;

/** What a call needs besides its request. */
export interface EgressOptions {
  policy: EgressPolicy;
  /** The concurrency bound of the process or thread; without one, calls are not counted. */
  gate?: EgressGate;
  resolver?: EgressResolver;
  connect?: EgressConnect;
}

/** Request headers a caller may not set: they belong to the connection or would misdirect it. */
const FORBIDDEN_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'keep-alive',
  'expect',
  'proxy-authorization',
  'proxy-connection',
]);

/** Headers kept across a redirect to another origin; the rest (credentials among them) are dropped. */
const CROSS_ORIGIN_SAFE_HEADERS = new Set([
  'accept',
  'accept-language',
  'content-language',
  'content-type',
  'user-agent',
]);

/** The system resolver (getaddrinfo: /etc/hosts, then DNS), every answer. */
const systemResolver: EgressResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address.toLowerCase(), family: a.family === 6 ? 6 : 4 }));
};

/** Plain TCP, or TLS verifying the certificate against the host name. */
export const socketConnect: EgressConnect = (target) =>
  target.tls
    ? tlsConnect({
        host: target.address,
        port: target.port,
        servername: target.servername,
        ALPNProtocols: ['http/1.1'],
      })
    : netConnect({ host: target.address, port: target.port });

/** `scheme://host:port` of a URL: what messages name (never the path or query, which may carry a secret). */
function originOf(url: URL): string {
  return url.origin;
}

/** The URL as the policy reads it, or a refusal. */
function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (error) {
    throw new EgressError('egress_refused', 'invalid_url', 'The URL is not a valid absolute URL.', { cause: error });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new EgressError('egress_refused', 'scheme', `Only http and https URLs may be called, not ${url.protocol}.`);
  if (url.username !== '' || url.password !== '')
    throw new EgressError(
      'egress_refused',
      'invalid_url',
      'A URL may not carry a user name or password; send credentials in a header.',
    );
  return url;
}

/**
 * The address a hop may connect to: the host checked against the organization's allow-list,
 * resolved (unless it is an address: the WHATWG parser has already turned decimal, octal and hex
 * forms into dotted quads), and every answer checked. One forbidden answer refuses the call,
 * whichever the connection would have used.
 */
async function checkedTarget(url: URL, orgId: string, options: EgressOptions): Promise<EgressTarget> {
  const { policy } = options;
  const literal = parseIp(url.hostname);
  const host = literal ? literal.address : url.hostname.toLowerCase().replace(/\.$/, '');
  if (!policy.hostAllowed(orgId, host))
    throw new EgressError(
      'egress_refused',
      'host_not_allowed',
      `${originOf(url)} is not on the hosts the operator allows this organization to call.`,
    );
  let addresses: IpAddress[];
  if (literal) addresses = [literal];
  else {
    try {
      addresses = await (options.resolver ?? systemResolver)(host);
    } catch (error) {
      throw new EgressError('egress_failed', 'dns', `The host of ${originOf(url)} could not be resolved.`, {
        cause: error,
      });
    }
    if (addresses.length === 0)
      throw new EgressError('egress_failed', 'dns', `The host of ${originOf(url)} has no address.`);
  }
  for (const ip of addresses) {
    const cls = policy.exemptions.has(ip) ? null : forbiddenClass(ip);
    if (cls !== null)
      throw new EgressError(
        'egress_refused',
        cls,
        literal
          ? `${originOf(url)} is a ${cls.replace('_', '-')} address, which outside calls may not reach.`
          : `${originOf(url)} resolves to a ${cls.replace('_', '-')} address, which outside calls may not reach.`,
      );
  }
  const chosen = addresses[0]!;
  const tls = url.protocol === 'https:';
  return {
    address: chosen.address,
    family: chosen.family,
    port: url.port === '' ? (tls ? 443 : 80) : Number(url.port),
    tls,
    ...(tls && !literal ? { servername: host } : {}),
  };
}

/** The caller's headers, checked. */
function requestHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const lower = name.toLowerCase();
    if (FORBIDDEN_HEADERS.has(lower) || lower.startsWith('proxy-') || lower.startsWith('sec-'))
      throw new EgressError('egress_refused', 'forbidden_header', `The header ${lower} may not be set by a call.`);
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n\0]/.test(value))
      throw new EgressError('egress_refused', 'forbidden_header', `The header ${lower} is malformed.`);
    out[lower] = value;
  }
  return out;
}

/** One HTTP exchange over a checked connection; the body read up to `maxBytes`. */
function exchange(
  url: URL,
  target: EgressTarget,
  method: string,
  headers: Record<string, string>,
  body: string | Uint8Array | undefined,
  maxBytes: number,
  signal: AbortSignal,
  connect: EgressConnect,
): Promise<{ res: IncomingMessage; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const outgoing: OutgoingHttpHeaders = { ...headers, host: url.host, connection: 'close' };
    if (body !== undefined) outgoing['content-length'] = Buffer.byteLength(body);
    const req = httpRequest({
      host: target.address,
      port: target.port,
      path: `${url.pathname}${url.search}`,
      method,
      headers: outgoing,
      setHost: false,
      // No agent: each call has its own socket, made by `connect` to the checked address only.
      createConnection: () => connect(target),
    });
    const fail = (error: Error) => {
      signal.removeEventListener('abort', onAbort);
      req.destroy();
      reject(error);
    };
    const onAbort = () => fail(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) =>
      fail(
        new EgressError('egress_failed', 'connect', `The call to ${originOf(url)} failed (${errorName(error)}).`, {
          cause: error,
        }),
      ),
    );
    req.on('response', (res) => {
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        fail(tooLarge(url, maxBytes));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          res.destroy();
          fail(tooLarge(url, maxBytes));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', (error) =>
        fail(
          new EgressError('egress_failed', 'connect', `The response of ${originOf(url)} broke off.`, { cause: error }),
        ),
      );
      res.on('end', () => {
        signal.removeEventListener('abort', onAbort);
        resolve({ res, body: Buffer.concat(chunks) });
      });
    });
    req.end(body);
  });
}

function tooLarge(url: URL, maxBytes: number): EgressError {
  return new EgressError(
    'egress_response_too_large',
    'response_too_large',
    `The response of ${originOf(url)} is larger than ${maxBytes} bytes.`,
  );
}

/** A system error's code (ECONNREFUSED, CERT_HAS_EXPIRED…) or its name: never a message that could quote data. */
function errorName(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === 'string' ? code : error.name;
}

function flatHeaders(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/**
 * Makes one outside call under `options.policy`: waits for a slot of the organization (the
 * gate), checks and connects each hop, follows redirects as asked, and answers the status,
 * headers and body (any status: the caller decides which it expects). Refusals and failures
 * reject with an `EgressError` whose `code` is the node error code and whose `reason` says why;
 * messages name the origin of a URL, never its path or query.
 */
export async function egressRequest(request: EgressRequest, options: EgressOptions): Promise<EgressResponse> {
  const { policy } = options;
  const method = (request.method ?? 'GET').toUpperCase();
  if (!(EGRESS_METHODS as readonly string[]).includes(method))
    throw new EgressError('egress_refused', 'invalid_request', `The method ${method} may not be used.`);
  if (request.body !== undefined && (method === 'GET' || method === 'HEAD'))
    throw new EgressError('egress_refused', 'invalid_request', `A ${method} request has no body.`);
  const timeoutMs = Math.min(request.timeoutMs ?? policy.maxTimeoutMs, policy.maxTimeoutMs);
  const maxBytes = Math.min(request.maxResponseBytes ?? policy.maxResponseBytes, policy.maxResponseBytes);
  let url = parseUrl(request.url);
  let headers = requestHeaders(request.headers);
  let body = request.body;
  let currentMethod = method;

  const timeout = new AbortController();
  const timer = setTimeout(
    () =>
      timeout.abort(
        new EgressError('egress_timeout', 'timeout', `The call to ${originOf(url)} took longer than ${timeoutMs} ms.`),
      ),
    timeoutMs,
  );
  const signal = request.signal ? AbortSignal.any([request.signal, timeout.signal]) : timeout.signal;
  const slot = await options.gate?.acquire(request.orgId, signal).catch((error: unknown) => {
    clearTimeout(timer);
    throw error;
  });
  try {
    for (let hop = 0; ; hop++) {
      const target = await abortable(checkedTarget(url, request.orgId, options), signal).catch((error: unknown) => {
        throw hop > 0 ? redirectRefusal(error) : error;
      });
      const { res, body: answer } = await exchange(
        url,
        target,
        currentMethod,
        headers,
        body,
        maxBytes,
        signal,
        options.connect ?? socketConnect,
      );
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      const isRedirect = [301, 302, 303, 307, 308].includes(status) && location !== undefined;
      if (!isRedirect || request.redirect === 'manual')
        return {
          status,
          statusText: res.statusMessage ?? '',
          headers: flatHeaders(res),
          body: answer,
          url: url.href,
          redirected: hop > 0,
        };
      if (request.redirect === 'error')
        throw new EgressError('egress_refused', 'redirect', `${originOf(url)} answered a redirect (${status}).`);
      if (hop >= MAX_REDIRECTS)
        throw new EgressError(
          'egress_refused',
          'too_many_redirects',
          `The call was redirected more than ${MAX_REDIRECTS} times.`,
        );
      let next: URL;
      try {
        next = parseUrl(new URL(location, url).href);
      } catch (error) {
        throw redirectRefusal(error);
      }
      if (next.origin !== url.origin)
        headers = Object.fromEntries(Object.entries(headers).filter(([name]) => CROSS_ORIGIN_SAFE_HEADERS.has(name)));
      if (status === 303 || ((status === 301 || status === 302) && currentMethod === 'POST')) {
        if (currentMethod !== 'HEAD') currentMethod = 'GET';
        body = undefined;
        delete headers['content-type'];
      }
      url = next;
    }
  } finally {
    clearTimeout(timer);
    slot?.release();
  }
}

/** A refusal of a redirect's target says it came from a redirect; other errors pass unchanged. */
function redirectRefusal(error: unknown): unknown {
  if (!(error instanceof EgressError) || error.code !== 'egress_refused') return error;
  return new EgressError(error.code, error.reason, `A redirect was refused: ${error.message}`, { cause: error });
}

/** `promise`, or the signal's reason when it aborts first (DNS lookups cannot be cancelled; their answer is then ignored). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}
