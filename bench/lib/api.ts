import type { Strongroom } from './strongroom.js';
import { FeatureMissing } from './types.js';

export interface ApiResponse {
  status: number;
  json: unknown;
  text: string;
}

export type ApiFlavour = 'tfe' | 'vault';

export function authHeaders(sr: Strongroom, flavour: ApiFlavour): Record<string, string> {
  return flavour === 'tfe'
    ? {
        authorization: `Bearer ${sr.token}`,
        'content-type': 'application/vnd.api+json',
        accept: 'application/vnd.api+json',
      }
    : { 'x-vault-token': sr.token, 'content-type': 'application/json' };
}

/**
 * A setup call against Strongroom. A 404 or 405 means the route does not exist yet, which skips
 * the scenario; any other unexpected status fails it with the answer in the message.
 */
export async function api(
  sr: Strongroom,
  flavour: ApiFlavour,
  method: string,
  path: string,
  opts: { body?: unknown; expect?: number[]; missingOn404?: boolean } = {},
): Promise<ApiResponse> {
  const res = await fetch(`${sr.url}${path}`, {
    method,
    headers: authHeaders(sr, flavour),
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  const expect = opts.expect ?? [200, 201, 204];
  if (expect.includes(res.status)) return { status: res.status, json, text };
  if ((res.status === 404 || res.status === 405) && opts.missingOn404 !== false) {
    throw new FeatureMissing(`${method} ${path.split('?')[0]} answered ${res.status}`);
  }
  throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 400)}`);
}

/** Reads a nested property of parsed JSON without trusting its shape. */
export function dig(value: unknown, ...keys: string[]): unknown {
  let v = value;
  for (const k of keys) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

export function digString(value: unknown, ...keys: string[]): string {
  const v = dig(value, ...keys);
  if (typeof v !== 'string')
    throw new Error(`expected a string at ${keys.join('.')}, got ${JSON.stringify(v)?.slice(0, 200)}`);
  return v;
}
