import type { ErrorKind } from '../shared/errors.js';

export const JSONAPI_CONTENT_TYPE = 'application/vnd.api+json';

export interface JsonApiError {
  status: string;
  title: string;
  detail: string;
  source?: { pointer: string };
}

const TITLES: Record<number, string> = {
  400: 'bad request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not found',
  405: 'method not allowed',
  409: 'conflict',
  412: 'precondition failed',
  413: 'payload too large',
  415: 'unsupported media type',
  422: 'invalid attribute',
  423: 'locked',
  429: 'too many requests',
  500: 'internal server error',
  503: 'service unavailable',
  507: 'insufficient storage',
};

/** HTTP status for a domain error kind under /api/v2. */
export function tfeStatusFor(kind: ErrorKind | 'internal'): number {
  switch (kind) {
    case 'not_found':
    case 'forbidden':
      // HCP Terraform hides the existence of what the caller may not see.
      return 404;
    case 'invalid':
      return 422;
    case 'conflict':
    case 'locked':
      return 409;
    case 'unauthenticated':
      return 401;
    case 'precondition_failed':
      return 412;
    case 'too_large':
      return 413;
    case 'unavailable':
      return 503;
    case 'insufficient_storage':
      return 507;
    case 'too_many_requests':
      return 429;
    default:
      return 500;
  }
}

export function jsonApiError(status: number, detail: string, pointer?: string): { errors: JsonApiError[] } {
  const error: JsonApiError = { status: String(status), title: TITLES[status] ?? 'error', detail };
  if (pointer) error.source = { pointer };
  return { errors: [error] };
}
