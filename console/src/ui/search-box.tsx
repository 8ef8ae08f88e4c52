/**
 * Find by id: an organization's, a revision's, or an execution's id (or an organization alias)
 * opens its page. The service is asked in that order; the first that answers wins.
 */
import { useState, type FormEvent } from 'react';
import { ApiError } from '../../../client/src/index.ts';
import { ok, type Service } from '../api/service.ts';
import { useService } from '../context.ts';
import { navigate, seg } from '../router.tsx';

/** The console path of what `id` names, or null. */
async function find(service: Service, id: string): Promise<string | null> {
  const absent = (error: unknown) =>
    error instanceof ApiError && (error.status === 404 || error.status === 400 || error.status === 403);
  try {
    await ok(service.rest.GET('/v1/orgs/{id}', { params: { path: { id } } }));
    return `/orgs/${seg(id)}`;
  } catch (error) {
    if (!absent(error)) throw error;
  }
  try {
    await ok(service.rest.GET('/v1/revisions/{id}', { params: { path: { id } } }));
    return `/revisions/${seg(id)}`;
  } catch (error) {
    if (!absent(error)) throw error;
  }
  return null;
}

export function SearchBox() {
  const service = useService();
  const [text, setText] = useState('');
  const [message, setMessage] = useState('');
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setMessage('');
    try {
      const path = await find(service, text.trim());
      if (path) navigate(path);
      else setMessage(`Nothing found for ${text.trim()}.`);
    } catch (error) {
      setMessage(error instanceof ApiError ? error.describe() : String(error));
    }
  };
  return (
    <form role="search" className="search" onSubmit={(event) => void submit(event)}>
      <label htmlFor="search-id" className="visually-hidden">
        Find by id or alias
      </label>
      <input id="search-id" value={text} onChange={(e) => setText(e.target.value)} placeholder="Find by id or alias" />
      <button type="submit">Find</button>
      <span role="status" className="search-message">
        {message}
      </span>
    </form>
  );
}
