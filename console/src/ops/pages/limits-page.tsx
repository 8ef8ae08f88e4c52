/**
 * Limit overrides: the limits in force of a user, organization or blob (value, source, held), an
 * override set or cleared on it, and the history of every set and clear (who, when, old → new).
 */
import { useState, type FormEvent } from 'react';
import { useLoad, usePages } from '../../api/use-load.ts';
import { navigate } from '../../router.tsx';
import { InForceCells, limitValue } from '../../ui/limit-cells.tsx';
import { Empty, Loading, More, Time } from '../../ui/states.tsx';
import { useOps } from '../context.ts';
import { OpsRefusal } from '../refusal.tsx';

interface LimitInForce {
  id: string;
  kind: string;
  unit: string;
  per: string;
  default: unknown;
  value: unknown;
  source: string;
  setOn: string[];
  held: number | null;
}

interface InForce {
  targetType: string;
  targetId: string;
  alias: string | null;
  groups: Array<{ id: string; label: string; limits: LimitInForce[] }>;
}

interface Change {
  id: string;
  limitId: string;
  action: string;
  hadOverride: boolean;
  oldValue: unknown;
  newValue: unknown;
  changedBy: string;
  changedAt: string;
}

const TYPES = ['user', 'org', 'blob'] as const;
const TYPE_NAMES: Record<string, string> = { user: 'User', org: 'Organization', blob: 'Blob' };

export function OpsLimitsPage({ targetType, targetId }: { targetType: string; targetId: string }) {
  const [type, setType] = useState(TYPES.includes(targetType as never) ? targetType : 'org');
  const [id, setId] = useState(targetId);
  const open = (event: FormEvent) => {
    event.preventDefault();
    if (id.trim()) navigate(`/limits?type=${encodeURIComponent(type)}&target=${encodeURIComponent(id.trim())}`);
  };
  return (
    <main>
      <h1>Limit overrides</h1>
      <form className="inline" onSubmit={open}>
        <label htmlFor="ops-level">Level</label>
        <select id="ops-level" value={type} onChange={(event) => setType(event.target.value)}>
          {TYPES.map((level) => (
            <option key={level} value={level}>
              {TYPE_NAMES[level]}
            </option>
          ))}
        </select>
        <label htmlFor="ops-target">Id or alias</label>
        <input id="ops-target" value={id} onChange={(event) => setId(event.target.value)} required />
        <button type="submit">Show limits</button>
      </form>
      {targetId ? (
        <TargetLimits targetType={targetType} targetId={targetId} />
      ) : (
        <Empty>Name a user, organization or blob to see its limits and set an override.</Empty>
      )}
    </main>
  );
}

function TargetLimits({ targetType, targetId }: { targetType: string; targetId: string }) {
  const ops = useOps();
  const target = { targetType, targetId };
  const inForce = useLoad(
    () =>
      ops<{ limitsInForce: InForce }>(
        `query ($targetType: LimitTargetType!, $targetId: String!) {
          limitsInForce(targetType: $targetType, targetId: $targetId) {
            targetType targetId alias
            groups { id label limits { id kind unit per default value source setOn held } } } }`,
        target,
      ),
    `${targetType}/${targetId}`,
  );
  const resolvedId = inForce.state === 'ready' ? inForce.data.limitsInForce.targetId : null;
  const changes = usePages(async (cursor) => {
    if (!resolvedId) return { items: [], next: null };
    const { limitOverrideChanges } = await ops<{ limitOverrideChanges: Change[] }>(
      `query ($targetType: LimitTargetType, $targetId: String, $beforeId: ID) {
          limitOverrideChanges(targetType: $targetType, targetId: $targetId, limit: 20, beforeId: $beforeId) {
            id limitId action hadOverride oldValue newValue changedBy changedAt } }`,
      { targetType, targetId: resolvedId, beforeId: cursor },
    );
    return {
      items: limitOverrideChanges,
      next: limitOverrideChanges.length > 0 ? limitOverrideChanges.at(-1)!.id : null,
    };
  }, resolvedId ?? '');
  const settable =
    inForce.state === 'ready'
      ? inForce.data.limitsInForce.groups.flatMap((group) =>
          group.limits.filter((limit) => limit.setOn.includes(targetType)),
        )
      : [];
  const [limitId, setLimitId] = useState('');
  const [value, setValue] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const chosen = limitId || settable[0]?.id || '';
  const write = async (action: 'set' | 'clear') => {
    setError(null);
    let parsed: unknown;
    if (action === 'set') {
      try {
        parsed = JSON.parse(value);
      } catch {
        setError(new Error('The value must be JSON: a number, true or false, a list of names, or null.'));
        return;
      }
    }
    setBusy(true);
    try {
      const variables = { limitId: chosen, targetType, targetId: resolvedId };
      if (action === 'set')
        await ops(
          `mutation ($limitId: String!, $targetType: LimitTargetType!, $targetId: String!, $value: LimitValue) {
            setLimitOverride(limitId: $limitId, targetType: $targetType, targetId: $targetId, value: $value) { change { id } } }`,
          { ...variables, value: parsed },
        );
      else
        await ops(
          `mutation ($limitId: String!, $targetType: LimitTargetType!, $targetId: String!) {
            clearLimitOverride(limitId: $limitId, targetType: $targetType, targetId: $targetId) { change { id } } }`,
          variables,
        );
      await Promise.all([inForce.reload(), changes.reload()]);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  if (inForce.state === 'loading') return <Loading what="limits" />;
  if (inForce.state === 'error') return <OpsRefusal error={inForce.error} />;
  const data = inForce.data.limitsInForce;
  return (
    <>
      <h2>
        {TYPE_NAMES[data.targetType]} {data.alias ?? data.targetId}
      </h2>
      <p className="muted">
        Id <code>{data.targetId}</code>
      </p>
      <section aria-labelledby="override-heading" className="panel">
        <h3 id="override-heading">Set or clear an override</h3>
        {settable.length === 0 ? (
          <Empty>No limit can be overridden on this level.</Empty>
        ) : (
          <form
            className="inline"
            onSubmit={(event) => {
              event.preventDefault();
              void write('set');
            }}
          >
            <label htmlFor="ops-limit">Limit</label>
            <select id="ops-limit" value={chosen} onChange={(event) => setLimitId(event.target.value)}>
              {settable.map((limit) => (
                <option key={limit.id} value={limit.id}>
                  {limit.id}
                </option>
              ))}
            </select>
            <label htmlFor="ops-value">Value (JSON)</label>
            <input id="ops-value" value={value} onChange={(event) => setValue(event.target.value)} required />
            <button type="submit" disabled={busy}>
              Set override
            </button>
            <button type="button" disabled={busy} onClick={() => void write('clear')}>
              Clear override
            </button>
          </form>
        )}
        {error !== null && <OpsRefusal error={error} action="The change" />}
      </section>
      {data.groups.map((group) => (
        <section key={group.id} aria-labelledby={`ops-group-${group.id}`}>
          <h3 id={`ops-group-${group.id}`}>{group.label}</h3>
          <table className="limits">
            <thead>
              <tr>
                <th scope="col">Limit</th>
                <th scope="col">Value in force</th>
                <th scope="col">Source</th>
                <th scope="col">Default</th>
                <th scope="col">Held</th>
                <th scope="col">Can be set on</th>
              </tr>
            </thead>
            <tbody>
              {group.limits.map((limit) => (
                <tr key={limit.id} data-limit={limit.id}>
                  <th scope="row">
                    <code>{limit.id}</code>
                  </th>
                  <InForceCells limit={limit} />
                  <td>{limit.setOn.length === 0 ? 'fixed' : limit.setOn.join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
      <section aria-labelledby="history-heading">
        <h3 id="history-heading">History of overrides on this {TYPE_NAMES[data.targetType]!.toLowerCase()}</h3>
        {changes.state === 'loading' && <Loading what="the history" />}
        {changes.state === 'error' && <OpsRefusal error={changes.error} />}
        {changes.state === 'ready' && changes.items.length === 0 && <Empty>No override was ever set here.</Empty>}
        {changes.items.length > 0 && (
          <table className="history">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Limit</th>
                <th scope="col">Change</th>
                <th scope="col">By</th>
              </tr>
            </thead>
            <tbody>
              {changes.items.map((change) => (
                <tr key={change.id}>
                  <th scope="row">
                    <Time at={change.changedAt} />
                  </th>
                  <td>
                    <code>{change.limitId}</code>
                  </td>
                  <td>
                    {change.action === 'set' ? 'set' : 'cleared'}:{' '}
                    {change.hadOverride ? limitValue(change.oldValue) : 'no override'} →{' '}
                    {change.action === 'set' ? limitValue(change.newValue) : 'no override'}
                  </td>
                  <td>{change.changedBy}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <More hasMore={changes.hasMore} loading={changes.state === 'more'} onMore={() => void changes.more()} />
      </section>
    </>
  );
}
