import { z } from 'zod';
import { BLOB_TYPE_NAMES } from '../../shared/blob-types.ts';
import type { CommandDefinition, RevisionCommand } from '../commands/command.ts';
import type { CommandRegistry } from '../commands/registry.ts';
import { IDEMPOTENCY_KEY_JSON_SCHEMA } from '../idempotency/idempotency-key.ts';
import { IDEMPOTENCY_KEY_DESCRIPTION } from '../openapi/route-schema.ts';

/** Named schemas (`meta({ id })`) met while converting, for the document's `components.schemas`. */
export type SchemaDefs = Record<string, unknown>;

/**
 * A zod schema as JSON Schema 2020-12 inside a document: named schemas go to `defs` and are
 * referred to as `#/components/schemas/<id>` (OpenAPI and OpenRPC both keep them there).
 */
function documentSchema(schema: z.ZodType, io: 'input' | 'output', defs: SchemaDefs = {}): Record<string, unknown> {
  const {
    $schema: _dialect,
    $defs,
    ...rest
  } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown> & {
    $defs?: SchemaDefs;
  };
  const relink = <T>(value: T): T =>
    JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/')) as T;
  for (const [id, def] of Object.entries($defs ?? {})) defs[id] ??= relink(def);
  return relink(rest);
}

/** The JSON Schema (2020-12) of what a command's params accept. */
export function paramsJsonSchema(definition: CommandDefinition, defs: SchemaDefs = {}): Record<string, unknown> {
  return documentSchema(definition.params, 'input', defs);
}

/** The JSON Schema of a command's result (its fields, without REST's `status`), or undefined when it declares none. */
export function resultJsonSchema(
  definition: CommandDefinition,
  defs: SchemaDefs = {},
): Record<string, unknown> | undefined {
  return definition.result === undefined ? undefined : documentSchema(definition.result, 'output', defs);
}

/** REST's answer of a result: `status: "success"` beside its fields, unless the result has a `status` of its own (check_definition). */
function restAnswer(schema: Record<string, unknown>): Record<string, unknown> {
  for (const list of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[list]))
      return { ...schema, [list]: (schema[list] as Record<string, unknown>[]).map(restAnswer) };
  }
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  if (properties.status !== undefined) return schema;
  return {
    ...schema,
    properties: { status: { type: 'string', const: 'success' }, ...properties },
    required: ['status', ...((schema.required as string[] | undefined) ?? [])],
  };
}

/** Every definition of `name` a revision answers, one per distinct definition (a name may differ by blob type). */
export function revisionDefinitions(registry: CommandRegistry, name: string): RevisionCommand[] {
  const found: RevisionCommand[] = [];
  for (const type of BLOB_TYPE_NAMES) {
    const definition = registry.get(name, type);
    if (definition !== undefined && definition.blobTypes !== undefined && !found.includes(definition))
      found.push(definition);
  }
  return found;
}

/** The template's answers with the 200 replaced by the command's result, where every definition of it declares one. */
function withResult(
  responses: Record<string, Record<string, unknown>>,
  definitions: readonly CommandDefinition[],
  defs: SchemaDefs,
): Record<string, unknown> {
  const results = definitions.map((definition) => resultJsonSchema(definition, defs));
  if (results.some((result) => result === undefined)) return responses;
  const answers = results.map((result) => restAnswer(result!));
  const schema = answers.length === 1 ? answers[0]! : { oneOf: answers };
  return {
    ...responses,
    200: { description: "The command's result beside `status`.", content: { 'application/json': { schema } } },
  };
}

/**
 * Replaces the one registered command route (`POST /v1/revisions/{revision_id}/{command}`) by one
 * path per revision command, each with its params as the request body, so a generated client
 * gets a typed call per command. Names with a route of their own (the binary session-file
 * transfers) keep it. The success answer is the command's declared `result` beside `status`
 * (withResult); the failures are the template's envelopes.
 */
export function expandCommands(
  paths: Record<string, Record<string, Record<string, unknown>>>,
  template: string,
  registry: CommandRegistry,
  defs: SchemaDefs,
  jsonLines: { command: string; types: readonly string[] },
): Record<string, Record<string, Record<string, unknown>>> {
  const route = paths[template]?.post;
  if (route === undefined) return paths;
  const { [template]: _generic, ...rest } = paths;
  const expanded: typeof paths = { ...rest };
  const parameters = ((route.parameters ?? []) as Array<{ name: string }>).filter(
    (parameter) => parameter.name !== 'command',
  );
  const prefix = template.replace('{command}', '');
  for (const name of [...registry.names].sort()) {
    const definitions = revisionDefinitions(registry, name);
    const path = prefix + name;
    if (definitions.length === 0 || expanded[path] !== undefined) continue;
    const variants: Array<Record<string, unknown>> = definitions.map((definition) => ({
      ...paramsJsonSchema(definition, defs),
      description: `On ${definition.blobTypes.join(', ')} revisions; needs ${definition.role}.`,
    }));
    const schema = variants.length === 1 ? variants[0]! : { oneOf: variants };
    const jsonLinesBody = {
      schema: { type: 'string', description: 'JSON Lines: one record `{text, labels?, meta?}` per line.' },
    };
    const content = {
      'application/json': { schema },
      ...(name === jsonLines.command ? Object.fromEntries(jsonLines.types.map((type) => [type, jsonLinesBody])) : {}),
    };
    const lines = definitions.map(
      (definition) =>
        `- ${definition.blobTypes.map((type) => `\`${type}\``).join(', ')}: needs \`${definition.role}\` on the blob.`,
    );
    expanded[path] = {
      post: {
        ...route,
        summary: name,
        description: [
          `The \`${name}\` command over REST (also the JSON-RPC method \`${name}\` with \`revision_id\` among its params). Revisions of these blob types answer it:`,
          ...lines,
        ].join('\n'),
        // A creating command takes the Idempotency-Key header over REST (the idempotency_key param over JSON-RPC).
        parameters: definitions.some((definition) => definition.creates)
          ? [
              ...parameters,
              {
                in: 'header',
                name: 'idempotency-key',
                required: false,
                description: IDEMPOTENCY_KEY_DESCRIPTION,
                schema: IDEMPOTENCY_KEY_JSON_SCHEMA,
              },
            ]
          : parameters,
        responses: withResult(route.responses as Record<string, Record<string, unknown>>, definitions, defs),
        requestBody: {
          required: variants.every((variant) => Array.isArray(variant.required) && variant.required.length > 0),
          content,
        },
      },
    };
  }
  return expanded;
}
