import { z } from 'zod';
import { routeSchema } from './route-schema.ts';

const checks = z.strictObject({ database: z.boolean(), migrated: z.boolean(), stopping: z.boolean() });

/** The probes' declarations (docs/operations.md, "Probes"): plain JSON, not the envelope. */
export const probeSchemas = {
  healthz: routeSchema({
    tags: ['Probes'],
    summary: 'Liveness',
    public: true,
    responses: { 200: z.strictObject({ status: z.literal('ok') }).meta({ description: 'The process answers.' }) },
  }),
  readyz: routeSchema({
    tags: ['Probes'],
    summary: 'Readiness',
    description: 'The database answers within 2 s, every shipped migration is applied, the process is not stopping.',
    public: true,
    responses: {
      200: z.strictObject({ status: z.literal('ready'), checks }).meta({ description: 'Ready.' }),
      503: z
        .strictObject({ status: z.literal('not_ready'), checks })
        .meta({ description: 'Not ready: which check failed.' }),
    },
  }),
};
