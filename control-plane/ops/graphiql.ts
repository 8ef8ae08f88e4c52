/**
 * GraphiQL for the operations API, served from the package: React, ReactDOM and GraphiQL's own
 * bundle and stylesheet come from node_modules, so the page works offline and makes no request to
 * another host. Its CSP allows scripts, styles and connections from its own origin only (styles
 * also inline: GraphiQL's components inject `<style>` elements); there is no inline script.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** The page and its assets: exempt from the ops token (they hold nothing secret). */
export const GRAPHIQL_PATH = /^\/graphiql(\/[a-z.-]+\.(js|css))?(\?|$)/;

const require = createRequire(import.meta.url);
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`));

/** Served file → where it is on disk and its type. */
const ASSETS: Record<string, { file: () => string; type: string }> = {
  'react.production.min.js': {
    file: () => join(packageDir('react'), 'umd', 'react.production.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
  'react-dom.production.min.js': {
    file: () => join(packageDir('react-dom'), 'umd', 'react-dom.production.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
  'graphiql.min.js': {
    file: () => join(packageDir('graphiql'), 'graphiql.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
  'graphiql.min.css': {
    file: () => join(packageDir('graphiql'), 'graphiql.min.css'),
    type: 'text/css; charset=utf-8',
  },
};

/** The CSP of the page and its assets: nothing from another origin, no inline script. */
const GRAPHIQL_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Operations API · GraphiQL</title>
  <meta name="robots" content="noindex" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <link rel="icon" href="data:," />
  <link rel="stylesheet" href="/graphiql/graphiql.min.css" />
  <link rel="stylesheet" href="/graphiql/page.css" />
</head>
<body>
  <div id="graphiql">Loading GraphiQL…</div>
  <script src="/graphiql/react.production.min.js"></script>
  <script src="/graphiql/react-dom.production.min.js"></script>
  <script src="/graphiql/graphiql.min.js"></script>
  <script src="/graphiql/start.js"></script>
</body>
</html>
`;

const PAGE_CSS = 'body { margin: 0; overflow: hidden; } #graphiql { height: 100vh; }\n';

// The token is typed into the Headers tab; it is not kept in the browser's storage.
const START = `/* global React, ReactDOM, GraphiQL */
const fetcher = GraphiQL.createFetcher({ url: new URL('/graphql', window.location.href).href });
ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, {
    fetcher,
    headerEditorEnabled: true,
    shouldPersistHeaders: false,
    defaultHeaders: '{\\n  "Authorization": "Bearer <OPS_TOKEN>"\\n}',
    defaultQuery: '{ health { status version database } runners { host pid alive heartbeatAt } }\\n',
  }),
);
`;

/** Registers `/graphiql` and its assets on the operations app. */
export function registerGraphiql(app: FastifyInstance): void {
  // The four files are fixed and read once, on first use (about 4 MB together).
  const cache = new Map<string, Promise<Buffer>>();
  const send = (reply: FastifyReply, type: string, body: string | Buffer) =>
    reply
      .header('content-security-policy', GRAPHIQL_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'no-cache')
      .type(type)
      .send(body);
  app.get('/graphiql', async (_request, reply) => send(reply, 'text/html; charset=utf-8', PAGE));
  app.get('/graphiql/page.css', async (_request, reply) => send(reply, 'text/css; charset=utf-8', PAGE_CSS));
  app.get('/graphiql/start.js', async (_request, reply) => send(reply, 'text/javascript; charset=utf-8', START));
  for (const [name, asset] of Object.entries(ASSETS)) {
    app.get(`/graphiql/${name}`, async (_request, reply) => {
      let body = cache.get(name);
      if (!body) {
        body = readFile(asset.file());
        cache.set(name, body);
      }
      return send(reply, asset.type, await body);
    });
  }
}
