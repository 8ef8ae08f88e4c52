/**
 * `http.request`: one outside call under the egress policy (shared/egress/request.ts). The URL,
 * header values and body are templates (shared/workflow/templates.ts); credentials they name are
 * read for the execution's blob and organization, and every form of them is redacted from what
 * the node leaves behind (its output and its error). The output is `{status, headers, body}`,
 * `body` parsed as JSON when the answer says it is JSON, else text; a status outside
 * `expected_statuses` (default 2xx) takes `failure` with `http_status`.
 */
import { egressRequest } from '../../shared/egress/request.ts';
import { isServiceError } from '../../shared/errors.ts';
import type { HttpRequestConfig } from '../../shared/workflow/processors.ts';
import { renderTemplate, templateCredentials } from '../../shared/workflow/templates.ts';
import { Redactor } from '../outside/redaction.ts';
import type { NodeError, NodeResult, Processor } from './processor.ts';

/** The body as the output carries it: JSON data when the answer is JSON and parses, else UTF-8 text. */
function bodyOf(headers: Record<string, string>, body: Buffer): unknown {
  const text = body.toString('utf8');
  if (/\bjson\b/i.test(headers['content-type'] ?? '')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

/** A thrown error as a node error, or null for one that is not a refusal. */
function nodeErrorOf(error: unknown): NodeError | null {
  if (isServiceError(error)) return { code: error.code, message: error.message };
  const code: unknown = error instanceof Error ? (error as Error & { code?: unknown }).code : undefined;
  const message = error instanceof Error ? error.message : '';
  if (typeof code === 'string') {
    if (code.startsWith('egress_') || code === 'template_error') return { code, message };
  }
  return null;
}

export const httpRequest: Processor<HttpRequestConfig> = {
  name: 'http.request',
  async run(ctx, config, input): Promise<NodeResult> {
    if (!ctx.outside)
      return {
        kind: 'failure',
        error: { code: 'processor_unavailable', message: 'This runner makes no outside calls.' },
      };
    const { execution } = ctx;
    const redactor = new Redactor();
    try {
      const templates = [config.url, ...Object.values(config.headers ?? {}), config.body ?? ''];
      const credentials = new Map<string, string>();
      for (const name of new Set(templates.flatMap(templateCredentials))) {
        const secret = await ctx.outside.credentials.get(execution, name);
        credentials.set(name, secret);
        redactor.add(secret);
      }
      // A URL that is one placeholder is taken whole; placeholders inside a URL are values in it, percent-encoded.
      const whole = /^\{\{\s*input(\.[A-Za-z0-9_-]+)*\s*\}\}$/.test(config.url);
      const url = renderTemplate(config.url, input, credentials, whole ? undefined : encodeURIComponent);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(config.headers ?? {}))
        headers[name] = renderTemplate(value, input, credentials);
      let body: string | undefined;
      if (config.body !== undefined) body = renderTemplate(config.body, input, credentials);
      else if (config.body_from_input) {
        body = JSON.stringify(input ?? null);
        if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
          headers['content-type'] = 'application/json';
      }
      const answer = await egressRequest(
        {
          url,
          method: config.method ?? 'GET',
          headers,
          ...(body !== undefined ? { body } : {}),
          ...(config.timeout_ms !== undefined ? { timeoutMs: config.timeout_ms } : {}),
          ...(config.max_response_bytes !== undefined ? { maxResponseBytes: config.max_response_bytes } : {}),
          ...(config.redirect !== undefined ? { redirect: config.redirect } : {}),
          orgId: execution.orgId,
          signal: ctx.signal,
        },
        ctx.outside.egress,
      );
      const output = redactor.value({
        status: answer.status,
        headers: answer.headers,
        body: bodyOf(answer.headers, answer.body),
      });
      const expected = config.expected_statuses;
      const ok = expected ? expected.includes(answer.status) : answer.status >= 200 && answer.status < 300;
      if (!ok)
        return {
          kind: 'failure',
          error: {
            code: 'http_status',
            message: `The call answered ${answer.status}, which is not among the expected statuses (${expected ? expected.join(', ') : '2xx'}).`,
          },
          attributes: { response: output },
        };
      return { kind: 'route', route: 'success', output };
    } catch (error) {
      const known = nodeErrorOf(error);
      // Anything else (a database failure, a lost lease's abort) is the interpreter's to handle.
      if (!known) throw error;
      return { kind: 'failure', error: { ...known, message: redactor.text(known.message) } };
    }
  },
};
