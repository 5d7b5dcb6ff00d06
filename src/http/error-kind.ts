import { isDomainError } from '../shared/errors.js';
import type { ErrorKind } from '../shared/errors.js';

export interface ClassifiedError {
  kind: ErrorKind | 'internal' | 'http';
  /** For kind 'http': the status Fastify chose (405, 415, …). */
  status?: number;
  message: string;
  field?: string;
}

/**
 * Turns anything a handler can throw into one of the domain kinds, so each product
 * renders it in its own envelope: DomainErrors keep their kind; Fastify's own client
 * errors (bad JSON, too-large bodies, schema failures) become `invalid`/`too_large`;
 * the rest is internal.
 */
export function classifyError(err: unknown, limits: { bodyLimit?: number } = {}): ClassifiedError {
  if (isDomainError(err)) return { kind: err.kind, message: err.message, field: err.field };
  const e = err as {
    code?: string;
    statusCode?: number;
    message?: string;
    validation?: Array<{ instancePath?: string; message?: string }>;
    validationContext?: string;
  };
  if (e && Array.isArray(e.validation)) {
    const first = e.validation[0];
    const where = first?.instancePath ? first.instancePath : '';
    const ctx = e.validationContext ?? 'body';
    return {
      kind: 'invalid',
      message: `invalid ${ctx}${where ? ` at ${where}` : ''}: ${first?.message ?? 'does not match the schema'}`,
      field: where || undefined,
    };
  }
  if (e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e?.statusCode === 413) {
    return { kind: 'too_large', message: bodyLimitMessage(limits.bodyLimit) };
  }
  if (
    e?.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
    e?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
    e instanceof SyntaxError
  ) {
    return { kind: 'invalid', message: `malformed JSON body: ${e?.message ?? ''}`.trim() };
  }
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { kind: 'http', status: e.statusCode, message: e.message ?? 'bad request' };
  }
  return { kind: 'internal', message: 'internal server error' };
}

/** The detail of a 413 for an API body over the body_limit setting: the limit, and the setting that raises it. */
export function bodyLimitMessage(bodyLimit: number | undefined): string {
  return limitMessage('request body', bodyLimit, 'body_limit');
}

/** The detail of a 413 for state uploaded over the max_upload_size setting: the limit, and the setting. */
export function uploadLimitMessage(maxUploadSize: number): string {
  return limitMessage('upload', maxUploadSize, 'max_upload_size');
}

function limitMessage(what: string, limit: number | undefined, key: string): string {
  const bound = limit === undefined ? 'the configured limit' : `the limit of ${limit} bytes`;
  const setting = `--${key.replaceAll('_', '-')} (STRONGROOM_${key.toUpperCase()}, config key ${key})`;
  return `${what} is larger than ${bound}; raise it with ${setting}`;
}

/** The detail of a 415 from an API that takes one media type: what it expects and what came. */
export function mediaTypeMessage(expected: string, sent: string | undefined): string {
  const got = sent ? `"${sent}"` : 'none';
  const hint = sent?.startsWith('application/x-www-form-urlencoded')
    ? ` (curl -d sends that unless told otherwise: add -H 'Content-Type: ${expected}')`
    : '';
  return `expected Content-Type: ${expected}, got ${got}${hint}`;
}
