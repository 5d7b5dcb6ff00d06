import { createHash, randomBytes } from 'node:crypto';

/** A PKCE pair as the Terraform CLI makes it (RFC 7636, S256). */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The CLI's token request: form-encoded to /oauth/token. */
export async function exchange(baseUrl: string, form: Record<string, string>) {
  const res = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = (await res.json()) as any;
  return { status: res.status, type: res.headers.get('content-type') ?? '', json };
}
