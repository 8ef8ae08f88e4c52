import type { FastifyInstance } from 'fastify';

export async function orgRoutes(_app: FastifyInstance): Promise<void> {}
