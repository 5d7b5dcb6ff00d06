import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PkiResult, TokenInfo, VaultOperation } from '../pki-route.js';
import type { FieldSchema } from '../vault-fields.js';
import type { TokenEntry } from '../tokens/token.js';

/**
 * Routes outside any mount (`sys/...`, `auth/token/...`). Same idea as PkiRoute, with
 * what the token and system endpoints need on top: the caller's raw token (lookup-self
 * echoes it), whether the caller holds `sudo` on the path, and `auth` blocks and the
 * legacy top-level copy of `data` in answers.
 */
export interface CallerToken {
  /** The token as sent. */
  token: string;
  info: TokenInfo;
  /** The caller's token store entry as authenticated; undefined for the admin token. */
  entry: TokenEntry | undefined;
}

export interface SystemRequestContext {
  /** Path relative to /v1 without leading slash: "sys/mounts/pki". */
  path: string;
  params: Record<string, string>;
  operation: VaultOperation;
  body: Record<string, unknown>;
  query: Record<string, string>;
  caller: CallerToken | undefined;
  /** The caller's ACL grants `sudo` on this path (always true for root). */
  sudo: boolean;
  requestId: string;
  request: FastifyRequest;
  reply: FastifyReply;
}

export type SystemResult =
  | PkiResult
  | {
      kind: 'json';
      data: unknown;
      warnings?: string[];
      status?: number;
      leaseId?: string;
      leaseDuration?: number;
      auth?: unknown;
      /** sys/* answers also carry every key of `data` at the top level (legacy clients read them there). */
      copyToTopLevel?: boolean;
    }
  /** Status only, no body (HEAD sys/health). */
  | { kind: 'status'; status: number }
  /** A binary body streamed as it is produced (sys/storage/raft/snapshot). */
  | { kind: 'stream'; contentType: string; headers: Record<string, string>; body: AsyncIterable<Buffer> };

export interface SystemRoute {
  /** Relative to /v1: "sys/mounts/*", "auth/token/create". */
  pattern: string;
  operations: VaultOperation[];
  handler(ctx: SystemRequestContext): Promise<SystemResult>;
  unauthenticated?: boolean;
  sudo?: boolean;
  /** For writes: whether the target exists, which makes the write `update` rather than `create`. */
  exists?(ctx: Omit<SystemRequestContext, 'caller' | 'sudo'>): Promise<boolean>;
  /** `mount_type` shown in answers. */
  mountType: 'system' | 'token';
  /** The request fields (for the OpenAPI document). */
  fields?: { readonly schema: FieldSchema };
  summary?: string;
}
