import { getSession } from './session';

/** An API answer that is not a success, with a message a person can act on. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Body = Record<string, unknown> | undefined;

function explain(status: number, detail: string): string {
  if (status === 401) return `Your session is not accepted (${detail || 'unauthorized'}). Sign in again.`;
  if (status === 403)
    return (
      `Permission denied${detail && detail !== 'permission denied' ? `: ${detail}` : ''}. ` +
      'Your token may not do this; sign in with one that may.'
    );
  if (status === 404)
    return detail ? `Not found: ${detail}` : 'Not found. It may have been deleted, or your token cannot see it.';
  if (status === 429) return 'The server is busy. Wait a moment and try again.';
  if (status >= 500)
    return `The server failed (${status}). Try again; if it keeps failing, ask an operator to check its log.`;
  return detail || `The request failed (${status}).`;
}

async function send(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    throw new ApiError(0, 'The server could not be reached. Check your connection and try again.');
  }
}

async function readJson(res: Response): Promise<any> {
  const text = await res.text();
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return { raw: text };
  }
}

/** A JSON:API call under /api/v2 with the session's state token. */
export async function tfe(method: string, path: string, body?: Body, token = getSession().tfe): Promise<any> {
  const headers: Record<string, string> = { accept: 'application/vnd.api+json' };
  if (token) headers['authorization'] = `Bearer ${token}`;
  if (body) headers['content-type'] = 'application/vnd.api+json';
  const res = await send(`/api/v2${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const json = await readJson(res);
  if (!res.ok) {
    const errs = (json?.errors ?? []) as { detail?: string; title?: string }[];
    const detail = errs
      .map((e) => e.detail || e.title || '')
      .filter(Boolean)
      .join('; ');
    throw new ApiError(res.status, explain(res.status, detail));
  }
  return json;
}

/** A Vault-style call under /v1 with the session's Vault token. */
export async function vault(method: string, path: string, body?: Body, token = getSession().vault): Promise<any> {
  const headers: Record<string, string> = {};
  if (token) headers['x-vault-token'] = token;
  if (body) headers['content-type'] = 'application/json';
  const res = await send(`/v1/${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const json = await readJson(res);
  if (!res.ok) {
    const errs = (json?.errors ?? []) as string[];
    if (res.status === 404 && errs.length === 0) throw new ApiError(404, explain(404, ''));
    throw new ApiError(res.status, explain(res.status, errs.join('; ')));
  }
  return json;
}

/** Fetches bytes with the right token and hands them to the browser as a download. */
export async function download(url: string, filename: string, kind: 'tfe' | 'vault'): Promise<void> {
  const s = getSession();
  const headers: Record<string, string> = {};
  if (kind === 'tfe' && s.tfe) headers['authorization'] = `Bearer ${s.tfe}`;
  if (kind === 'vault' && s.vault) headers['x-vault-token'] = s.vault;
  const res = await send(url, { headers });
  if (!res.ok) throw new ApiError(res.status, explain(res.status, (await res.text()).slice(0, 200)));
  saveBlob(await res.blob(), filename);
}

export function saveBlob(blob: Blob, filename: string): void {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

export const enc = encodeURIComponent;
