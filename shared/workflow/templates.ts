/**
 * The templates of `http.request` configs (url, header values, body): text with `{{ref}}`
 * placeholders, `ref` being `input` (the node's input), `input.<path>` (a dotted path into it:
 * keys and array indexes of `A-Z a-z 0-9 _ -`) or `credentials.<NAME>` (a stored credential,
 * docs/access.md). The catalog checks the references when a definition is checked; the runner
 * renders them.
 */

const PLACEHOLDER_RE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const INPUT_RE = /^input(?:\.[A-Za-z0-9_-]+)*$/;
const CREDENTIAL_RE = /^credentials\.([A-Za-z0-9][A-Za-z0-9._-]{0,127})$/;

/** One placeholder: where it is and what it names. */
type Ref = { kind: 'input'; path: string[] } | { kind: 'credential'; name: string };

function parseRef(text: string): Ref | null {
  const credential = CREDENTIAL_RE.exec(text);
  if (credential) return { kind: 'credential', name: credential[1]! };
  if (INPUT_RE.test(text)) return { kind: 'input', path: text.split('.').slice(1) };
  return null;
}

/** The problems of `template`'s placeholders (empty when every one is well formed). */
export function templateProblems(template: string): string[] {
  const problems: string[] = [];
  for (const match of template.matchAll(PLACEHOLDER_RE))
    if (parseRef(match[1]!) === null)
      problems.push(`{{${match[1]}}} is not {{input}}, {{input.<path>}} or {{credentials.<NAME>}}`);
  return problems;
}

/** The credential names `template` refers to. */
export function templateCredentials(template: string): string[] {
  const names: string[] = [];
  for (const match of template.matchAll(PLACEHOLDER_RE)) {
    const ref = parseRef(match[1]!);
    if (ref?.kind === 'credential') names.push(ref.name);
  }
  return names;
}

/** A placeholder that cannot be rendered (`code`: `template_error`). */
class TemplateError extends Error {
  readonly code = 'template_error';
}

function atPath(input: unknown, path: readonly string[]): unknown {
  let value = input;
  for (const key of path) {
    if (Array.isArray(value) && /^\d+$/.test(key)) value = value[Number(key)];
    else if (value !== null && typeof value === 'object' && Object.hasOwn(value, key))
      value = (value as Record<string, unknown>)[key];
    else return undefined;
  }
  return value;
}

/**
 * `template` with each placeholder replaced by `encode` of its value: an input string as it is,
 * any other input value as JSON, a credential's secret as it is. Throws a TemplateError for a
 * path the input does not have.
 */
export function renderTemplate(
  template: string,
  input: unknown,
  credentials: ReadonlyMap<string, string>,
  encode: (text: string) => string = (text) => text,
): string {
  return template.replace(PLACEHOLDER_RE, (_whole, text: string) => {
    const ref = parseRef(text);
    if (ref === null) throw new TemplateError(`{{${text}}} is not a placeholder this template may hold.`);
    if (ref.kind === 'credential') {
      const secret = credentials.get(ref.name);
      if (secret === undefined) throw new TemplateError(`{{credentials.${ref.name}}} was not resolved.`);
      return encode(secret);
    }
    const value = atPath(input, ref.path);
    if (value === undefined)
      throw new TemplateError(`{{${['input', ...ref.path].join('.')}}} has no value in the node's input.`);
    return encode(typeof value === 'string' ? value : JSON.stringify(value));
  });
}
