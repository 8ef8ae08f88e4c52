/**
 * Sign-in: anonymous, an API key, or an identity provider's ID token when the service has one
 * configured (/console/settings.json says). "Remember me" keeps the credential in localStorage;
 * without it, the credential lasts as long as the tab (sessionStorage).
 */
import { useEffect, useState, type FormEvent } from 'react';
import { ok } from '../api/service.ts';
import { useConsole } from '../context.ts';
import { navigate } from '../router.tsx';
import { Refusal } from '../ui/states.tsx';

export function SignInPage({ next }: { next: string }) {
  const { service, store } = useConsole();
  const [remember, setRemember] = useState(false);
  const [apiKey, setApiKey] = useState('');
  const [idToken, setIdToken] = useState('');
  const [oidc, setOidc] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    fetch('/console/settings.json')
      .then((response) => response.json() as Promise<{ oidc: boolean }>)
      .then((settings) => setOidc(settings.oidc))
      .catch(() => setOidc(false));
  }, []);

  const attempt = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      navigate(next, true);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  const anonymous = () =>
    attempt(async () => store.signedIn(await ok(service.anonymous.POST('/v1/auth/anonymous', { body: {} })), remember));

  const withKey = (event: FormEvent) => {
    event.preventDefault();
    void attempt(async () => {
      // Checked before it is kept: a wrong key is refused here, not on the next page.
      await ok(
        service.anonymous.GET('/v1/users/{user_id}', {
          params: { path: { user_id: 'me' } },
          headers: { 'x-api-key': apiKey.trim() },
        }),
      );
      store.usingApiKey(apiKey.trim(), remember);
    });
  };

  const withIdToken = (event: FormEvent) => {
    event.preventDefault();
    void attempt(async () =>
      store.signedIn(
        await ok(service.anonymous.POST('/v1/auth/google', { body: { id_token: idToken.trim() } })),
        remember,
      ),
    );
  };

  return (
    <main className="sign-in">
      <h1>Sign in to the workspace console</h1>
      {error !== null && <Refusal error={error} action="Sign-in" />}
      <p>
        <label>
          <input type="checkbox" checked={remember} onChange={(event) => setRemember(event.target.checked)} /> Remember
          me on this browser (keeps the credential in local storage; otherwise it is forgotten when the tab closes)
        </label>
      </p>
      <section aria-labelledby="anonymous-heading">
        <h2 id="anonymous-heading">Anonymous</h2>
        <p>A new account of your own, with no password.</p>
        <button type="button" onClick={() => void anonymous()} disabled={busy}>
          Sign in anonymously
        </button>
      </section>
      <section aria-labelledby="key-heading">
        <h2 id="key-heading">API key</h2>
        <form onSubmit={withKey}>
          <label htmlFor="api-key">API key</label>
          <input
            id="api-key"
            type="password"
            autoComplete="off"
            value={apiKey}
            onChange={(e) => setApiKey(e.target.value)}
            placeholder="wsk_…"
            required
          />
          <button type="submit" disabled={busy}>
            Sign in with the key
          </button>
        </form>
      </section>
      {oidc && (
        <section aria-labelledby="oidc-heading">
          <h2 id="oidc-heading">Identity provider</h2>
          <form onSubmit={withIdToken}>
            <label htmlFor="id-token">ID token from your identity provider</label>
            <input
              id="id-token"
              type="password"
              autoComplete="off"
              value={idToken}
              onChange={(e) => setIdToken(e.target.value)}
              required
            />
            <button type="submit" disabled={busy}>
              Sign in with the ID token
            </button>
          </form>
        </section>
      )}
    </main>
  );
}
