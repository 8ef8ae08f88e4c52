/** The console's frame (header, search, sign-out) and its table of pages by URL. */
import { lazy, Suspense, type ReactNode } from 'react';
import { useConsole, useCredential } from './context.ts';
import { AccessPage } from './pages/access-page.tsx';
import { BlobPage } from './pages/blob-page.tsx';
import { DefinitionPage } from './pages/definition-page.tsx';
import { ExecutionPage } from './pages/execution-page.tsx';
import { LimitsPage } from './pages/limits-page.tsx';
import { OrgPage } from './pages/org-page.tsx';
import { OrgsPage } from './pages/orgs-page.tsx';
import { RevisionPage } from './pages/revision-page.tsx';
import { SessionPage } from './pages/session-page.tsx';
import { SignInPage } from './pages/sign-in-page.tsx';
import { Link, match, navigate, useLocation } from './router.tsx';
import { SearchBox } from './ui/search-box.tsx';
import { Loading } from './ui/states.tsx';

const DefinitionEditorPage = lazy(() => import('./pages/definition-editor-page.tsx'));
// cronstrue and croner load with the page that needs them, not with the first load.
const SchedulesPage = lazy(() => import('./pages/schedules-page.tsx'));
const GraphBlobPage = lazy(() => import('./pages/graph-blob-page.tsx'));
const NlpRecordsPage = lazy(() => import('./pages/nlp-records-page.tsx'));
const ModelPage = lazy(() => import('./pages/model-page.tsx'));

type Route = [pattern: string, page: (params: Record<string, string>) => ReactNode];

const ROUTES: Route[] = [
  ['/', () => <OrgsPage />],
  ['/limits', () => <LimitsPage of={{ kind: 'user' }} />],
  ['/keys', () => <AccessPage of={{ kind: 'user' }} />],
  ['/orgs/:org', (p) => <OrgPage orgId={p.org!} />],
  ['/orgs/:org/limits', (p) => <LimitsPage of={{ kind: 'org', orgId: p.org! }} />],
  ['/orgs/:org/access', (p) => <AccessPage of={{ kind: 'organization', orgId: p.org! }} />],
  ['/orgs/:org/blobs/:blob', (p) => <BlobPage orgId={p.org!} blobId={p.blob!} />],
  ['/orgs/:org/blobs/:blob/limits', (p) => <LimitsPage of={{ kind: 'blob', orgId: p.org!, blobId: p.blob! }} />],
  ['/orgs/:org/blobs/:blob/access', (p) => <AccessPage of={{ kind: 'blob', orgId: p.org!, blobId: p.blob! }} />],
  [
    '/orgs/:org/blobs/:blob/revisions/:rev/model',
    (p) => <ModelPage orgId={p.org!} blobId={p.blob!} revisionId={p.rev!} />,
  ],
  ['/revisions/:rev', (p) => <RevisionPage revisionId={p.rev!} />],
  ['/revisions/:rev/schedules', (p) => <SchedulesPage revisionId={p.rev!} />],
  ['/revisions/:rev/graph', (p) => <GraphBlobPage revisionId={p.rev!} />],
  ['/revisions/:rev/records', (p) => <NlpRecordsPage revisionId={p.rev!} />],
  ['/revisions/:rev/definitions/new', (p) => <DefinitionEditorPage revisionId={p.rev!} />],
  ['/revisions/:rev/definitions/:def', (p) => <DefinitionPage revisionId={p.rev!} definitionId={p.def!} />],
  ['/revisions/:rev/sessions/:session', (p) => <SessionPage revisionId={p.rev!} sessionId={p.session!} />],
  ['/revisions/:rev/executions/:exec', (p) => <ExecutionPage revisionId={p.rev!} executionId={p.exec!} />],
];

function Page({ path }: { path: string }) {
  for (const [pattern, page] of ROUTES) {
    const params = match(pattern, path);
    // Keyed by path: moving between two pages of one kind starts the second afresh.
    if (params)
      return (
        <Suspense key={path} fallback={<Loading what="the page" />}>
          {page(params)}
        </Suspense>
      );
  }
  return (
    <main>
      <h1>No such page</h1>
      <p>
        <Link to="/">Organizations</Link>
      </p>
    </main>
  );
}

export function App() {
  const { service, store } = useConsole();
  const credential = useCredential();
  const { path, query } = useLocation();
  if (!credential || path === '/sign-in') {
    const next = path === '/sign-in' ? (query.get('next') ?? '/') : path + (location.search ?? '');
    return <SignInPage next={next.startsWith('/') && !next.startsWith('//') ? next : '/'} />;
  }
  const signOut = async () => {
    await service.close();
    store.signOut();
    navigate('/', true);
  };
  return (
    <>
      <a href="#content" className="skip">
        Skip to the page
      </a>
      <header className="top">
        <Link to="/" className="brand">
          Workspace console
        </Link>
        <nav aria-label="Main">
          <Link to="/">Organizations</Link> <Link to="/limits">Your limits</Link> <Link to="/keys">Your API keys</Link>
        </nav>
        <SearchBox />
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <div id="content">
        <Page path={path} />
      </div>
    </>
  );
}
