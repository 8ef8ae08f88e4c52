/**
 * Who can reach an organization, a blob or the signed-in account: its members (grant, change,
 * remove) and its API keys (mint, with the secret shown once; list; revoke).
 */
import { useState, type FormEvent } from 'react';
import type { components } from '../../../client/src/rest-types.ts';
import { ok } from '../api/service.ts';
import { useLoad } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { OwnerCrumbs } from '../ui/owner-crumbs.tsx';
import { Empty, Loading, Refusal, Time } from '../ui/states.tsx';

type MintedApiKey = components['schemas']['MintedApiKey'];
type Role = 'read' | 'write' | 'admin';
const ROLES: Role[] = ['read', 'write', 'admin'];

export type AccessOf =
  { kind: 'user' } | { kind: 'organization'; orgId: string } | { kind: 'blob'; orgId: string; blobId: string };

export function AccessPage({ of }: { of: AccessOf }) {
  const target = of.kind === 'user' ? 'me' : of.kind === 'organization' ? of.orgId : of.blobId;
  const title =
    of.kind === 'user'
      ? 'Your API keys'
      : of.kind === 'organization'
        ? 'Access to the organization'
        : 'Access to the blob';
  return (
    <main>
      {of.kind !== 'user' && <OwnerCrumbs orgId={of.orgId} blobId={of.kind === 'blob' ? of.blobId : undefined} />}
      <h1>{title}</h1>
      {of.kind !== 'user' && <Members target={of.kind} targetId={target} />}
      <ApiKeys target={of.kind} targetId={target} />
    </main>
  );
}

function Members({ target, targetId }: { target: 'organization' | 'blob'; targetId: string }) {
  const service = useService();
  const members = useLoad(
    () =>
      ok(
        service.rest.GET('/v1/members/target/{target}/{target_id}', {
          params: { path: { target, target_id: targetId } },
        }),
      ),
    `${target}/${targetId}`,
  );
  const [userId, setUserId] = useState('');
  const [role, setRole] = useState<Role>('read');
  const [error, setError] = useState<unknown>(null);
  const grant = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    try {
      await ok(
        service.rest.POST('/v1/members', { body: { target, target_id: targetId, user_id: userId.trim(), role } }),
      );
      setUserId('');
      await members.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  const remove = async (user: string) => {
    setError(null);
    try {
      await ok(service.rest.DELETE('/v1/members', { body: { target, target_id: targetId, user_id: user } }));
      await members.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      {members.state === 'loading' && <Loading what="members" />}
      {members.state === 'error' && <Refusal error={members.error} />}
      {members.state === 'ready' && members.data.members.length === 0 && <Empty>No member besides the owner.</Empty>}
      {members.state === 'ready' && members.data.members.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">User</th>
              <th scope="col">Role</th>
              <th scope="col">Since</th>
              <th scope="col">
                <span className="visually-hidden">Remove</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.members.map((member) => (
              <tr key={member.user_id}>
                <th scope="row">
                  <code>{member.user_id}</code>
                </th>
                <td>{member.role}</td>
                <td>
                  <Time at={member.created_at} />
                </td>
                <td>
                  <button type="button" className="danger" onClick={() => void remove(member.user_id)}>
                    Remove {member.user_id}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form className="inline" onSubmit={(event) => void grant(event)}>
        <label htmlFor="member-user">User id</label>
        <input id="member-user" value={userId} onChange={(event) => setUserId(event.target.value)} required />
        <label htmlFor="member-role">Role</label>
        <select id="member-role" value={role} onChange={(event) => setRole(event.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
        <button type="submit">Grant</button>
      </form>
      {error !== null && <Refusal error={error} action="Changing the members" />}
    </section>
  );
}

function ApiKeys({ target, targetId }: { target: 'organization' | 'blob' | 'user'; targetId: string }) {
  const service = useService();
  const keys = useLoad(
    () =>
      ok(
        service.rest.GET('/v1/api-keys/target/{target}/{target_id}', {
          params: { path: { target, target_id: targetId } },
        }),
      ),
    `${target}/${targetId}`,
  );
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('read');
  const [minted, setMinted] = useState<MintedApiKey | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const mint = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const { api_key } = await ok(
        service.rest.POST('/v1/api-keys', {
          body: { target, target_id: targetId, role, ...(name.trim() ? { name: name.trim() } : {}) },
        }),
      );
      setMinted(api_key);
      setName('');
      await keys.reload();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (id: string) => {
    setError(null);
    try {
      await ok(service.rest.DELETE('/v1/api-keys', { body: { id } }));
      if (minted?.id === id) setMinted(null);
      await keys.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      {minted && (
        <div className="secret" role="status">
          <p>
            Key <strong>{minted.name}</strong> minted. Copy its secret now: it is shown this once and never again.
          </p>
          <p>
            <code data-testid="minted-key">{minted.key}</code>{' '}
            <button type="button" onClick={() => setMinted(null)}>
              I have copied it
            </button>
          </p>
        </div>
      )}
      {keys.state === 'loading' && <Loading what="API keys" />}
      {keys.state === 'error' && <Refusal error={keys.error} />}
      {keys.state === 'ready' && keys.data.api_keys.length === 0 && <Empty>No API key yet.</Empty>}
      {keys.state === 'ready' && keys.data.api_keys.length > 0 && (
        <table className="api-keys">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Role</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span className="visually-hidden">Revoke</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.data.api_keys.map((key) => (
              <tr key={key.id} data-key={key.id}>
                <th scope="row">{key.name}</th>
                <td>
                  <code>{key.prefix}</code>
                </td>
                <td>{key.role}</td>
                <td>
                  <Time at={key.created_at} />
                </td>
                <td>
                  <Time at={key.last_used_at} />
                </td>
                <td>
                  <button type="button" className="danger" onClick={() => void revoke(key.id)}>
                    Revoke {key.name}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form className="inline" onSubmit={(event) => void mint(event)}>
        <label htmlFor="key-name">Name (optional)</label>
        <input id="key-name" value={name} onChange={(event) => setName(event.target.value)} maxLength={100} />
        <label htmlFor="key-role">Role</label>
        <select id="key-role" value={role} onChange={(event) => setRole(event.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
        <button type="submit" disabled={busy}>
          Mint API key
        </button>
      </form>
      {error !== null && <Refusal error={error} action="Changing the API keys" />}
    </section>
  );
}
