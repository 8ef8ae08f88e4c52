import type { FastifyInstance } from 'fastify';

export async function serviceAccountRoutes(_app: FastifyInstance): Promise<void> {}
