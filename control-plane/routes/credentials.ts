import type { FastifyInstance } from 'fastify';

export async function credentialRoutes(_app: FastifyInstance): Promise<void> {}
