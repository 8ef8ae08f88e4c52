/**
 * Find by id: any id the service hands out — an organization's, blob's, revision's, session's,
 * definition's, execution's or schedule's — or an organization's or blob's alias opens its page
 * (`GET /v1/find/:id` says what it is and where it belongs; a revision opens its blob type's page).
 */
import { useState, type FormEvent } from 'react';
import { ApiError } from '../../../client/src/index.ts';
import { ok, type Service } from '../api/service.ts';
import { useService } from '../context.ts';
import { pathOf } from '../api/places.ts';
import { navigate } from '../router.tsx';

/** The console path of what `id` names among what the caller may read, or null. */
async function find(service: Service, id: string): Promise<string | null> {
  try {
    const { found } = await ok(service.rest.GET('/v1/find/{id}', { params: { path: { id } } }));
    return pathOf(found);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 400)) return null;
    throw error;
  }
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
