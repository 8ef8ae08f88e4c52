import type { FastifyInstance } from 'fastify';

export async function metadataRoutes(_app: FastifyInstance): Promise<void> {}
