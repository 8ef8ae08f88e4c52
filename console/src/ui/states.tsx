/** The loading, empty and error states every page shows, and a refusal said in words. */
import type { ReactNode } from 'react';
import { ApiError, ConnectionError } from '../../../client/src/index.ts';
import { limitValue } from './limit-cells.tsx';

export function Loading({ what }: { what: string }) {
  return (
    <p className="state" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="state empty">{children}</p>;
}

/** A limit refusal in words: which limit, its value, and what is held. */
export function limitInWords(limit: NonNullable<ApiError['limit']>): string {
  const held = limit.held === undefined ? '' : `; ${limitValue(limit.held)} held`;
  return `limit ${limit.id} is ${limitValue(limit.value)}${held}`;
}

/** A refusal of the service (its code, message and limit), or any other failure. */
export function Refusal({ error, action }: { error: unknown; action?: string }) {
  const prefix = action ? `${action} failed: ` : '';
  if (error instanceof ApiError) {
    return (
      <div className="refusal" role="alert">
        <p>
          {prefix}
          <code className="code">{error.error}</code> {error.message}
        </p>
        {error.limit && <p className="limit">The {limitInWords(error.limit)}.</p>}
        {error.errors && error.errors.length > 0 && (
          <ul>
            {error.errors.map((issue, i) => (
              <li key={i}>
                <code>{issue.code}</code> {issue.node ? `node ${issue.node}` : 'graph'}
                {issue.field ? `, ${issue.field}` : ''}: {issue.message}
              </li>
            ))}
          </ul>
        )}
      </div>
    );
  }
  const text =
    error instanceof ConnectionError
      ? `The connection to the service failed: ${error.message}`
      : error instanceof Error
        ? error.message
        : String(error);
  return (
    <div className="refusal" role="alert">
      <p>
        {prefix}
        {text}
      </p>
    </div>
  );
}

/** A "Load more" button for a cursor listing, or nothing at the end. */
export function More({ hasMore, loading, onMore }: { hasMore: boolean; loading: boolean; onMore: () => void }) {
  if (!hasMore) return null;
  return (
    <button type="button" className="more" onClick={onMore} disabled={loading}>
      {loading ? 'Loading…' : 'Load more'}
    </button>
  );
}

/** JSON, pretty-printed. */
export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      {value === undefined ? '—' : JSON.stringify(value, null, 2)}
    </pre>
  );
}

/** A timestamp in the reader's zone, with the exact value on hover. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span>—</span>;
  return (
    <time dateTime={at} title={at}>
      {new Date(at).toLocaleString()}
    </time>
  );
}
