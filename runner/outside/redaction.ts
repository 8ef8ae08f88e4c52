/**
 * Redaction of the secrets a node run resolved: whatever the run leaves behind (its output, its
 * error, its logs, what its code writes into the session) has every occurrence of a secret, its
 * base64 and base64url forms and its URL-encoded form replaced by `[redacted]`. The run's code could
 * still transform a secret past recognition (docs/access.md, "Credentials in workflows"): this
 * stops the mistakes, not a determined author.
 */

const REDACTED = '[redacted]';

/** Secrets shorter than this are replaced only where a whole string equals them: a substring rule would eat ordinary text. */
const MIN_SUBSTRING_CHARS = 4;

/** The secrets one node run resolved, and the forms in which each is recognised. */
export class Redactor {
  readonly #forms = new Set<string>();
  readonly #exact = new Set<string>();

  /** Registers a secret the run resolved. */
  add(secret: string): void {
    if (secret === '') return;
    const bytes = Buffer.from(secret, 'utf8');
    const forms = [
      secret,
      bytes.toString('base64').replace(/=+$/, ''),
      bytes.toString('base64url'),
      encodeURIComponent(secret),
    ];
    for (const form of forms) {
      if (form.length >= MIN_SUBSTRING_CHARS) this.#forms.add(form);
      else this.#exact.add(form);
    }
  }

  get empty(): boolean {
    return this.#forms.size === 0 && this.#exact.size === 0;
  }

  /** `text` with every known form replaced, longest first (so a form inside another goes with it). */
  text(text: string): string {
    if (this.empty) return text;
    if (this.#exact.has(text)) return REDACTED;
    let out = text;
    for (const form of [...this.#forms].sort((a, b) => b.length - a.length))
      if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  }

  /** A copy of JSON-like `value` with every string (object keys included) redacted. */
  value<T>(value: T): T {
    if (this.empty) return value;
    return this.#walk(value) as T;
  }

  #walk(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.#walk(v));
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[this.text(k)] = this.#walk(v);
      return out;
    }
    return value;
  }
}
