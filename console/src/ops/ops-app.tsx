/**
 * The operator's console: asks for OPS_TOKEN (kept in the page's memory only, as GraphiQL does:
 * a reload asks again), then its pages by URL under /console on the ops port.
 */
import { useState, type FormEvent, type ReactNode } from 'react';
import { Link, match, useLocation } from '../router.tsx';
import { OpsCredentialContext } from './context.ts';
import { opsQuery, type OpsCredential } from './graphql.ts';
import { AuditPage } from './pages/audit-page.tsx';
import { OpsLimitsPage } from './pages/limits-page.tsx';
import { QueuesPage } from './pages/queues-page.tsx';
import { RetentionPage } from './pages/retention-page.tsx';
import { RunnersPage } from './pages/runners-page.tsx';
import { OpsRefusal } from './refusal.tsx';

const ROUTES: Array<[string, (query: URLSearchParams) => ReactNode]> = [
  ['/', () => <RunnersPage />],
  ['/queues', () => <QueuesPage />],
  [
    '/limits',
    (query) => <OpsLimitsPage targetType={query.get('type') ?? 'org'} targetId={query.get('target') ?? ''} />,
  ],
  ['/audit', () => <AuditPage />],
  ['/retention', () => <RetentionPage />],
];

export function OpsApp() {
  const [credential, setCredential] = useState<OpsCredential | null>(null);
  const { path, query } = useLocation();
  if (!credential) return <TokenPage onSignIn={setCredential} />;
  const route = ROUTES.find(([pattern]) => match(pattern, path));
  return (
    <OpsCredentialContext.Provider value={credential}>
      <a href="#content" className="skip">
        Skip to the page
      </a>
      <header className="top">
        <Link to="/" className="brand">
          Operator console
        </Link>
        <nav aria-label="Main">
          <Link to="/">Runners</Link> <Link to="/queues">Queues</Link> <Link to="/limits">Limit overrides</Link>{' '}
          <Link to="/audit">Audit log</Link> <Link to="/retention">Retention</Link>
        </nav>
        <button type="button" className="push-right" onClick={() => setCredential(null)}>
          Sign out
        </button>
      </header>
      <div id="content">
        {route ? (
          <div key={path + '?' + query.toString()}>{route[1](query)}</div>
        ) : (
          <main>
            <h1>No such page</h1>
            <p>
              <Link to="/">Runners</Link>
            </p>
          </main>
        )}
      </div>
    </OpsCredentialContext.Provider>
  );
}

function TokenPage({ onSignIn }: { onSignIn: (credential: OpsCredential) => void }) {
  const [token, setToken] = useState('');
  const [actor, setActor] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const credential = { token, actor };
    try {
      // Checked before it is kept: a wrong token is refused here, not on every page.
      await opsQuery(credential, '{ health { status } }');
      onSignIn(credential);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="sign-in">
      <h1>Operator console</h1>
      <p>
        The operations API of this service. Every call carries the operations token (<code>OPS_TOKEN</code>); it is kept
        in this page's memory only, so a reload asks for it again.
      </p>
      <form onSubmit={(event) => void submit(event)}>
        <label>
          Operations token
          <input
            type="password"
            value={token}
            onChange={(event) => setToken(event.target.value)}
            autoComplete="off"
            required
          />
        </label>
        <label>
          Your name (optional: the override history records it)
          <input value={actor} onChange={(event) => setActor(event.target.value)} maxLength={100} />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
      {error !== null && <OpsRefusal error={error} action="Signing in" />}
    </main>
  );
}
