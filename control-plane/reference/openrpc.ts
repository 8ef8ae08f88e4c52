import { errorCatalog } from '../../shared/errors.ts';
import { VERSION } from '../../shared/version.ts';
import type { CommandRegistry } from '../commands/registry.ts';
import { RPC_ERROR } from '../ws/json-rpc.ts';
import { paramsJsonSchema, resultJsonSchema, revisionDefinitions, type SchemaDefs } from './commands.ts';
import { IDEMPOTENCY_KEY_JSON_SCHEMA } from '../idempotency/idempotency-key.ts';
import { IDEMPOTENCY_KEY_DESCRIPTION } from '../openapi/route-schema.ts';

/** Creating commands (`creates`) take a key among their params (control-plane/idempotency/). */
const IDEMPOTENCY_KEY = {
  name: 'idempotency_key',
  required: false,
  description: IDEMPOTENCY_KEY_DESCRIPTION.replace('`Idempotent-Replayed: true`', 'the same result'),
  schema: IDEMPOTENCY_KEY_JSON_SCHEMA,
};

const REVISION_ID = {
  name: 'revision_id',
  required: true,
  description: 'The revision the command runs on (REST puts it in the path).',
  schema: { type: 'string', minLength: 1, maxLength: 200 },
};

/** The errors every method may answer; `error.data` is the REST failure envelope without `status`, plus `http_status`. */
const ERRORS = [
  {
    code: RPC_ERROR.invalidParams,
    message: 'Invalid params',
    data: "invalid_request_body: the params failed the method's schema (the message names the fields).",
  },
  {
    code: RPC_ERROR.methodNotFound,
    message: 'Method not found',
    data: "unknown_command: no such method, or the revision's blob type does not answer it.",
  },
  {
    code: RPC_ERROR.refused,
    message: 'Refused',
    data: `Any other code of the catalogue (docs/errors.md) in error.data.error: ${Object.keys(errorCatalog).join(', ')}.`,
  },
].map(({ code, message, data }) => ({ code, message, data: { description: data } }));

type JsonSchema = Record<string, unknown> & { properties?: Record<string, unknown>; required?: string[] };

/**
 * The OpenRPC 1.3 document of the WebSocket API (`GET /v1` upgraded, JSON-RPC 2.0), generated from
 * the command registry: one method per command name, params by name from the command's zod
 * schema. A revision command takes `revision_id` besides its own params; a name answered by
 * several blob types with different params lists the union of their params (a param required
 * only where every variant requires it) and each variant's whole schema under `x-variants`.
 */
export function openRpcDocument(registry: CommandRegistry): Record<string, unknown> {
  const defs: SchemaDefs = {};
  const methods = [...registry.names].sort().map((name) => {
    const plain = registry.get(name);
    const definitions =
      plain !== undefined && plain.blobTypes === undefined ? [plain] : revisionDefinitions(registry, name);
    const schemas = definitions.map((definition) => paramsJsonSchema(definition, defs) as JsonSchema);
    const results = definitions.map((definition) => resultJsonSchema(definition, defs));
    const result = results.some((schema) => schema === undefined)
      ? { type: 'object' }
      : results.length === 1
        ? results[0]
        : { oneOf: results };
    const names = [...new Set(schemas.flatMap((schema) => Object.keys(schema.properties ?? {})))];
    const params = names.map((param) => {
      const present = schemas.filter((schema) => schema.properties?.[param] !== undefined);
      const variants = present.map((schema) => schema.properties![param]);
      const unique = [...new Map(variants.map((variant) => [JSON.stringify(variant), variant])).values()];
      return {
        name: param,
        required: present.length === schemas.length && present.every((schema) => schema.required?.includes(param)),
        schema: unique.length === 1 ? unique[0] : { anyOf: unique },
      };
    });
    const revisionCommand = definitions.some((definition) => definition.blobTypes !== undefined);
    const method: Record<string, unknown> = {
      name,
      paramStructure: 'by-name',
      params: [
        ...(revisionCommand ? [REVISION_ID] : []),
        ...params,
        ...(definitions.some((definition) => 'creates' in definition && definition.creates === true)
          ? [IDEMPOTENCY_KEY]
          : []),
      ],
      result: {
        name: 'result',
        description: "The command's fields (the REST answer without `status`).",
        schema: result,
      },
      errors: ERRORS,
    };
    if (revisionCommand) {
      method.description = definitions
        .map(
          (definition) =>
            `${(definition.blobTypes ?? []).join(', ')} revisions (needs ${(definition as { role?: string }).role})`,
        )
        .join('; ');
      method['x-blob-types'] = [...new Set(definitions.flatMap((definition) => definition.blobTypes ?? []))];
    }
    if (definitions.length > 1) {
      method['x-variants'] = definitions.map((definition, i) => ({
        blob_types: definition.blobTypes,
        role: (definition as { role?: string }).role,
        params: schemas[i],
      }));
    }
    return method;
  });
  return {
    openrpc: '1.3.2',
    info: {
      title: 'Workspace service commands',
      version: VERSION,
      description:
        'JSON-RPC 2.0 over the WebSocket at GET /v1 (docs/commands.md). Revision commands are also served over REST: POST /v1/revisions/{revision_id}/{method} (see /v1/openapi.json).',
    },
    servers: [{ name: 'WebSocket', url: '/v1' }],
    methods,
    components: { schemas: defs },
  };
}
