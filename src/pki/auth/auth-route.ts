import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SystemResult } from '../sys/system-route.js';
import type { VaultOperation } from '../pki-route.js';
import type { FieldSchema } from '../vault-fields.js';
import { authBlock } from '../tokens/token-routes.js';
import type { AuthMount } from './auth-mount.js';
import type { LoginOutcome } from './auth-mount-service.js';

/**
 * Routes inside an auth mount (`auth/<path>/...`), served by the /v1 dispatcher: it finds the
 * mount, authenticates (except on login paths), checks the ACL on the full path, then calls
 * the handler of the mount's method.
 */
export interface AuthRequestContext {
  mount: AuthMount;
  /** Path relative to the mount: "login", "role/web/secret-id". */
  path: string;
  params: Record<string, string>;
  operation: VaultOperation;
  body: Record<string, unknown>;
  query: Record<string, string>;
  /** The address the request came from (as the socket sees it). */
  clientIp: string;
  requestId: string;
  request: FastifyRequest;
  reply: FastifyReply;
}

export interface AuthRoute {
  /** Relative to the mount: "login", "role/:role_name". */
  pattern: string;
  operations: VaultOperation[];
  handler(ctx: AuthRequestContext): Promise<SystemResult>;
  /** Login paths: reachable without a token. */
  unauthenticated?: boolean;
  /** The body's fields, for the OpenAPI document (sys/internal/specs/openapi). */
  fields?: { readonly schema: FieldSchema };
  summary?: string;
}

/** A login's answer: Vault's `auth` block and no data. */
export function loginResult(outcome: LoginOutcome): SystemResult {
  return { kind: 'json', data: null, auth: authBlock(outcome.token, outcome.entry, outcome.entry.ttl) };
}

/** Role paths of every method refuse names Vault would not route. */
export function roleName(params: Record<string, string>, key = 'role_name'): string {
  return (params[key] ?? '').trim();
}
