/** A small Vault-style HTTP client for the /v1 end-to-end tests (real fetch, no app.inject). */
export interface VaultReply {
  status: number;
  contentType: string;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface VaultCallOptions {
  token?: string | undefined;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as application/x-www-form-urlencoded. */
  form?: Record<string, string | string[]>;
  headers?: Record<string, string>;
  /** Which header carries the token. */
  tokenHeader?: 'x-secrets-token' | 'x-vault-token' | 'bearer';
}

export async function vault(
  baseUrl: string,
  method: string,
  path: string,
  opts: VaultCallOptions = {},
): Promise<VaultReply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token !== undefined) {
    const h = opts.tokenHeader ?? 'x-vault-token';
    if (h === 'bearer') headers['authorization'] = `Bearer ${opts.token}`;
    else headers[h] = opts.token;
  }
  let body: string | undefined;
  if (opts.form) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.form)) for (const x of Array.isArray(v) ? v : [v]) p.append(k, x);
    body = p.toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl}/v1/${path.replace(/^\/+/, '')}`, { method, headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, json };
}

/** Binds the base URL and a default token. */
export function vaultClient(baseUrl: string, defaultToken?: string) {
  return (method: string, path: string, opts: VaultCallOptions = {}) =>
    vault(baseUrl, method, path, { ...opts, token: 'token' in opts ? opts.token : defaultToken });
}
