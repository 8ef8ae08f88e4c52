/**
 * The WebSocket connection a command arrived on, for commands that push to it later (`subscribe`:
 * docs/sessions-and-events.md, "Live updates"). Over REST there is none.
 */
export interface CommandConnection {
  readonly id: string;
  /** Sends a JSON-RPC notification (`{jsonrpc, method, params}`, no `id`) if the socket is open. */
  notify(method: string, params: Record<string, unknown>): void;
  /** Runs `listener` once when the socket closes (release subscriptions there). */
  onClose(listener: () => void): void;
}
