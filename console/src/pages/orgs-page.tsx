/** The signed-in user's organizations, and a form to create one. */
import { useState, type FormEvent } from 'react';
import { ok } from '../api/service.ts';
import { useLoad } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { Link, navigate, seg } from '../router.tsx';
import { Empty, Loading, Refusal } from '../ui/states.tsx';

export function OrgsPage() {
  const service = useService();
  const orgs = useLoad(
    () => ok(service.rest.GET('/v1/users/{user_id}/orgs', { params: { path: { user_id: 'me' } } })),
    'orgs',
  );
  const [alias, setAlias] = useState('');
  const [error, setError] = useState<unknown>(null);

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    try {
      const { org } = await ok(service.rest.POST('/v1/orgs', { body: { alias: alias.trim() } }));
      navigate(`/orgs/${seg(org.id)}`);
    } catch (caught) {
      setError(caught);
    }
  };

  return (
    <main>
      <h1>Organizations</h1>
      {orgs.state === 'loading' && <Loading what="organizations" />}
      {orgs.state === 'error' && <Refusal error={orgs.error} />}
      {orgs.state === 'ready' &&
        (orgs.data.orgs.length === 0 ? (
          <Empty>No organization yet: create one below.</Empty>
        ) : (
          <ul className="cards">
            {orgs.data.orgs.map((org) => (
              <li key={org.id}>
                <Link to={`/orgs/${seg(org.id)}`}>{org.alias}</Link> <span className="muted">{org.name}</span>
              </li>
            ))}
          </ul>
        ))}
      <section aria-labelledby="new-org">
        <h2 id="new-org">New organization</h2>
        <form onSubmit={(event) => void create(event)} className="inline">
          <label htmlFor="org-alias">Alias</label>
          <input id="org-alias" value={alias} onChange={(e) => setAlias(e.target.value)} required placeholder="acme" />
          <button type="submit">Create organization</button>
        </form>
        {error !== null && <Refusal error={error} action="Creating the organization" />}
      </section>
    </main>
  );
}
