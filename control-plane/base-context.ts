import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db/db.ts';

/**
 * What the lower layers of the control plane (access, auth, idempotency, events, scheduler) use of
 * the process's services: its configuration and its database. `AppContext` (context.ts), which
 * routes and commands get, is this and the services of the layers above; a lower layer names
 * only what it uses, so its imports point down (docs/architecture.md, "Layers of the control plane").
 */
export interface BaseContext {
  config: Config;
  db: Db;
}
