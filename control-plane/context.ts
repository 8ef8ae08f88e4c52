import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db/db.ts';
import type { TokenService } from './auth/tokens.ts';
import type { Principal } from './auth/principal.ts';

/** What every route and command handler gets: the process's services, nothing global. */
export interface AppContext {
  config: Config;
  db: Db;
  tokens: TokenService;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
  interface FastifyRequest {
    /** Set by the auth hook on every route not marked `config: { public: true }`. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** The route needs no credential (sign-in, refresh). */
    public?: boolean;
  }
}
