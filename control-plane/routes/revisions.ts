import type { FastifyInstance } from 'fastify';

export async function revisionRoutes(_app: FastifyInstance): Promise<void> {}
