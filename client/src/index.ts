/**
 * The workspace-service client, for Node (20+) and browsers: REST typed from the service's
 * OpenAPI document (openapi-fetch) and the WebSocket JSON-RPC API (typed commands, batches,
 * subscriptions as async iterators, reconnect with resubscribe). docs/client.md shows its use.
 */
export { ApiError, ConnectionError, type DefinitionIssue, type FailureFields, type LimitObject } from './errors.ts';
export {
  base64url,
  credentialHeaders,
  type ApiKeyCredential,
  type Credential,
  type SocketCredentialForm,
  type TokenCredential,
} from './credentials.ts';
export {
  CREATING_COMMANDS,
  CREATING_ROUTES,
  IDEMPOTENCY_HEADER,
  IDEMPOTENCY_PARAM,
  newIdempotencyKey,
} from './idempotency.ts';
export { createRestClient, ok, socketUrlOf, type paths, type RestClient, type RestOptions } from './rest.ts';
export {
  RpcClient,
  type BatchCall,
  type BatchOutcome,
  type ReconnectOptions,
  type RpcOptions,
  type SocketFactory,
  type SocketLike,
} from './rpc.ts';
export { Subscription, compareEventIds } from './subscription.ts';
export type * from './commands.ts';
