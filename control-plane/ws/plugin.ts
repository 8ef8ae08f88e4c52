import type { FastifyInstance } from 'fastify';

/** The WebSocket JSON-RPC endpoint at `/v1` (access issue). */
export async function websocketPlugin(_app: FastifyInstance): Promise<void> {}
