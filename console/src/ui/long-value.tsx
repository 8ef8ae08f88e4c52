/**
 * A JSON value that may be long: the first DISPLAY_CHARS characters shown, **Show all** for the
 * rest, and **Copy** for the whole text. A value the service kept only in part (a node run's
 * input or output past NODE_RUN_VALUE_BYTES) is shown as the part kept, saying how much it was.
 */
import { useState } from 'react';

/** Characters shown before **Show all**: a long value must not make the page lay out megabytes. */
const DISPLAY_CHARS = 2_000;

/** What the service kept of a value too large to keep whole: its first bytes, and its size. */
export interface CutValue {
  preview: string;
  bytes: number;
}

export function LongValue({ value, cut, label }: { value?: unknown; cut?: CutValue | null; label: string }) {
  const [all, setAll] = useState(false);
  const [copied, setCopied] = useState('');
  const text = cut ? cut.preview : JSON.stringify(value, null, 2);
  const long = text.length > DISPLAY_CHARS;
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('Copied.');
    } catch (error) {
      setCopied(`Could not copy: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  return (
    <div className="long-value">
      {cut && (
        <p className="muted">
          {cut.bytes.toLocaleString()} bytes of JSON; the service keeps the first{' '}
          {new TextEncoder().encode(cut.preview).length.toLocaleString()} of a node run's value.
        </p>
      )}
      <pre className="json" aria-label={label} tabIndex={0}>
        {long && !all ? `${text.slice(0, DISPLAY_CHARS)}…` : text}
      </pre>
      <p className="value-actions">
        {long && (
          <button type="button" aria-expanded={all} onClick={() => setAll(!all)}>
            {all ? 'Show less' : `Show all ${text.length.toLocaleString()} characters`}
          </button>
        )}{' '}
        <button type="button" onClick={() => void copy()} aria-label={`Copy ${label}`}>
          Copy
        </button>{' '}
        <span role="status">{copied}</span>
      </p>
    </div>
  );
}
