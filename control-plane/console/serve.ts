/**
 * The web console at /console (docs/console.md): the files Vite built into console/dist, served
 * from the API's own origin so the page needs no CORS and its CSP can say `'self'` for
 * everything. Every path under /console that is not a built file answers index.html, so a page's
 * URL survives a reload (the console routes in the browser). The pages are public; what they
 * show is read with the signed-in user's credential, through the API.
 */
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ServiceError } from '../../shared/errors.ts';

const DIST = join(import.meta.dirname, '..', '..', 'console', 'dist');
const PREFIX = '/console';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/**
 * Stricter than helmet's default: scripts, styles, fonts, images and connections (REST and the
 * WebSocket) from this origin only, no inline script or style element, no framing, no plugins.
 * `upgrade-insecure-requests` is left out: on a plain-HTTP deployment it would send the
 * same-origin WebSocket to a `wss:` that is not there.
 */
const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "script-src-attr 'none'",
  // Style attributes (the graph canvas positions its nodes with them); style elements stay refused.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** What the sign-in page needs to know before anyone signs in: which sign-ins this service takes. */
export interface ConsoleSettings {
  /** Identity-provider sign-in is configured (OIDC_AUDIENCE is set). */
  oidc: boolean;
}

async function sendFile(reply: FastifyReply, file: string, immutable: boolean): Promise<FastifyReply> {
  const body = await readFile(file);
  return reply
    .header('content-type', TYPES[extname(file)] ?? 'application/octet-stream')
    .header('content-security-policy', CONSOLE_CSP)
    .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
    .send(body);
}

/** The file under dist/ a request path names, or null when it escapes dist/ or names none. */
function builtFile(path: string): string | null {
  let relative: string;
  try {
    relative = decodeURIComponent(path.slice(PREFIX.length + 1));
  } catch {
    return null;
  }
  if (relative === '' || relative.includes('\0')) return null;
  const file = normalize(join(DIST, relative));
  return file.startsWith(DIST + sep) ? file : null;
}

/** The console's two pages: the tenant's (API port) and the operator's (ops port), one build. */
export type ConsolePage = 'index.html' | 'ops.html';
const PAGES: readonly ConsolePage[] = ['index.html', 'ops.html'];

/** The paths the console answers: its page, its assets, its settings. */
export const CONSOLE_PATH = /^\/console(\/|\?|$)/;

/**
 * Registers GET /console and /console/* answering `page` (the console routes in the browser), the
 * built assets, and, with `settings`, /console/settings.json. The other page's HTML is not served
 * here: the operator's console exists on the ops port only.
 */
export async function consoleRoutes(
  app: FastifyInstance,
  page: ConsolePage,
  settings: ConsoleSettings | null,
): Promise<void> {
  // Hidden from the OpenAPI document: pages, not API.
  const options = { config: { public: true }, schema: { hide: true } };
  const index = async (reply: FastifyReply) => {
    try {
      return await sendFile(reply, join(DIST, page), false);
    } catch {
      throw new ServiceError('not_found', 'The console is not built: run `npm install` (or `npx vite build console`).');
    }
  };
  const otherPage = (file: string) => PAGES.some((name) => name !== page && file === join(DIST, name));
  app.get(PREFIX, options, async (_request, reply) => index(reply));
  if (settings) app.get(`${PREFIX}/settings.json`, options, async () => settings);
  app.get(`${PREFIX}/*`, options, async (request, reply) => {
    const path = request.url.split('?')[0]!;
    const file = builtFile(path);
    if (file !== null && extname(file) !== '' && !otherPage(file)) {
      try {
        return await sendFile(reply, file, path.startsWith(`${PREFIX}/assets/`));
      } catch {
        // A missing asset is a 404, not the page: a stale tab must not run HTML as a script.
        throw new ServiceError('not_found', `No console file ${path}.`);
      }
    }
    return index(reply);
  });
}
