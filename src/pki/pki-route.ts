import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FieldSchema } from './vault-fields.js';

/**
 * The contract between the /v1 dispatcher (mounts, tokens, ACL) and the modules that
 * serve paths inside a PKI mount. A module exports PkiRoute values; the dispatcher finds
 * the mount, authenticates, checks the ACL on the full path, coerces the body, then calls
 * the handler. Handlers make one service call and shape the answer.
 */
export type VaultOperation = 'create' | 'read' | 'update' | 'patch' | 'delete' | 'list';

export interface MountInfo {
  /** Accessor-like id, stable for the mount's life. */
  id: string;
  /** Path with trailing slash, as Vault shows it: "pki/" or "pki-int/". */
  path: string;
  type: 'pki';
  defaultLeaseTtlSeconds: number;
  maxLeaseTtlSeconds: number;
}

export interface TokenInfo {
  /** Accessor (never the token itself). */
  accessor: string;
  policies: string[];
  isRoot: boolean;
  displayName: string;
}

export interface PkiRequestContext {
  mount: MountInfo;
  /** Path relative to the mount, without leading slash: "issue/web". */
  path: string;
  params: Record<string, string>;
  operation: VaultOperation;
  /** Body after form/JSON parsing; values are still raw (use vault-fields to coerce). */
  body: Record<string, unknown>;
  query: Record<string, string>;
  /** Undefined on unauthenticated paths. */
  token: TokenInfo | undefined;
  requestId: string;
  request: FastifyRequest;
  reply: FastifyReply;
}

export type PkiResult =
  | {
      kind: 'json';
      data: unknown;
      warnings?: string[];
      leaseId?: string;
      leaseDuration?: number;
      status?: number;
      /** Fields of `data` whose strings recur across answers (an issuer's PEMs): serialised once and reused. */
      repeated?: readonly string[];
    }
  /** 204 No Content, as Vault answers most writes that return nothing. */
  | { kind: 'empty' }
  /** Raw bytes: PEM/DER certificates, CRLs, OCSP answers. */
  | { kind: 'raw'; status?: number; contentType: string; body: Buffer | string };

export interface PkiRoute {
  /** Pattern relative to the mount: "issue/:role", "issuer/:ref/json", "certs". */
  pattern: string;
  /** Operations served; GET→read, LIST or ?list=true→list, POST/PUT→update (or create), PATCH→patch, DELETE→delete. */
  operations: VaultOperation[];
  handler(ctx: PkiRequestContext): Promise<PkiResult>;
  /**
   * Documents that the path is one of Vault's unauthenticated PKI paths. The dispatcher
   * decides from that list alone (UNAUTHENTICATED_PKI_PATTERNS in vault-paths.ts), so this
   * flag never makes a path public by itself.
   */
  unauthenticated?: boolean;
  /** Needs the sudo capability on top of the operation's. */
  sudo?: boolean;
  /** The request fields, as the handler parses them: they describe the path in the OpenAPI document. */
  fields?: { readonly schema: FieldSchema };
  /** One line for the OpenAPI document. */
  summary?: string;
}
