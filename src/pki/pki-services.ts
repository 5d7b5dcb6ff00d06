import type { FastifyInstance } from 'fastify';
import type { CoreDeps } from '../deps.js';
import type { PkiPluginOptions } from './pki-plugin.js';

/**
 * The PKI engine's composition root: builds its repos and services from the core
 * dependencies and registers its routes inside the /v1 plugin.
 */
export interface PkiServices {
  registerRoutes(app: FastifyInstance, opts: PkiPluginOptions): Promise<void>;
  jobHandlers: Record<string, (payload: unknown, ctx: { jobId: string; attempt: number; signal: AbortSignal }) => Promise<void>>;
  /** Releases background resources (key pools, timers) at shutdown. */
  close?(): Promise<void>;
}

export function buildPkiServices(_core: CoreDeps): PkiServices {
  return {
    async registerRoutes() {},
    jobHandlers: {},
  };
}
