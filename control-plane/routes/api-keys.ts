import type { FastifyInstance } from 'fastify';

export async function apiKeyRoutes(_app: FastifyInstance): Promise<void> {}
