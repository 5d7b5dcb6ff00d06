import type { FastifyInstance } from 'fastify';
import type { CoreDeps } from '../deps.js';
import type { TfePluginOptions } from './tfe-plugin.js';

/**
 * The Terraform state service's composition root: builds its repos and services from
 * the core dependencies and registers its routes inside the /api/v2 plugin.
 */
export interface TfeServices {
  /** Routes under /api/v2. */
  registerRoutes(app: FastifyInstance, opts: TfePluginOptions): Promise<void>;
  /** Routes outside /api/v2 (/.well-known/terraform.json, upload URLs), with the same JSON:API errors. */
  registerRootRoutes(app: FastifyInstance, opts: TfePluginOptions): Promise<void>;
  /** Job handlers this product runs, by job kind. */
  jobHandlers: Record<string, (payload: unknown, ctx: { jobId: string; attempt: number; signal: AbortSignal }) => Promise<void>>;
}

export function buildTfeServices(_core: CoreDeps): TfeServices {
  return {
    async registerRoutes() {},
    async registerRootRoutes() {},
    jobHandlers: {},
  };
}
