/**
 * The one error model of the server. Services and repos throw these; each product
 * plugin maps the kind to its own protocol (JSON:API under /api/v2, Vault under /v1).
 * Nothing here mentions HTTP.
 */
export type ErrorKind =
  | 'not_found'
  | 'invalid'
  | 'conflict'
  | 'locked'
  | 'forbidden'
  | 'unauthenticated'
  | 'precondition_failed'
  | 'too_large'
  | 'unavailable'
  /** The server lacks the disk space to take what was sent (HTTP 507). */
  | 'insufficient_storage'
  /** Too much of this work at once; the client should retry shortly (HTTP 429). */
  | 'too_many_requests';

export class DomainError extends Error {
  readonly kind: ErrorKind;
  /** The offending input, as a JSON pointer into the request body where one applies. */
  readonly field: string | undefined;
  /** Optional protocol-neutral detail a product may choose to render. */
  readonly meta: Record<string, unknown> | undefined;

  constructor(
    kind: ErrorKind,
    message: string,
    options: { field?: string; meta?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DomainError';
    this.kind = kind;
    this.field = options.field;
    this.meta = options.meta;
  }
}

export const notFound = (message: string, field?: string) => new DomainError('not_found', message, { field });
export const invalid = (message: string, field?: string) => new DomainError('invalid', message, { field });
export const conflict = (message: string, field?: string) => new DomainError('conflict', message, { field });
export const forbidden = (message: string) => new DomainError('forbidden', message);
export const unauthenticated = (message = 'unauthorized') => new DomainError('unauthenticated', message);

export function isDomainError(err: unknown): err is DomainError {
  return err instanceof DomainError;
}
