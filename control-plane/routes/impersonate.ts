import type { FastifyInstance } from 'fastify';

export async function impersonateRoutes(_app: FastifyInstance): Promise<void> {}
