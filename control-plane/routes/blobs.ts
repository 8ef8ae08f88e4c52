import type { FastifyInstance } from 'fastify';

export async function blobRoutes(_app: FastifyInstance): Promise<void> {}
