/** PEM (RFC 7468) encoding and decoding, including bundles of several blocks. */
import { decodeBase64Canonical } from '../../shared/base64.js';
import { DomainError } from '../../shared/errors.js';

export interface PemBlock {
  label: string;
  der: Buffer;
}

/** One PEM block with 64-character lines and a trailing newline. */
export function pemEncode(label: string, der: Buffer): string {
  const b64 = der.toString('base64');
  let body = '';
  for (let i = 0; i < b64.length; i += 64) body += b64.slice(i, i + 64) + '\n';
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END ([A-Z0-9 ]+)-----/g;

/** Strict base64 (whitespace ignored); throws `invalid` on anything else. */
export function decodeBase64Strict(text: string, what = 'data'): Buffer {
  const clean = text.replace(/\s+/g, '');
  const bytes = clean.length === 0 ? null : decodeBase64Canonical(clean);
  if (!bytes) throw new DomainError('invalid', `${what} is not valid base64`);
  return bytes;
}

/** Every PEM block in `text`, in order; text between blocks is ignored. */
export function pemDecodeAll(text: string): PemBlock[] {
  const out: PemBlock[] = [];
  for (const m of text.matchAll(BLOCK)) {
    const label = m[1]!;
    if (m[3] !== label) throw new DomainError('invalid', `PEM block "${label}" ends with "${m[3]}"`);
    // Encapsulated headers (RFC 1421, e.g. encrypted keys) precede a blank line.
    let body = m[2]!;
    if (/^[\s]*[A-Za-z-]+:/.test(body)) {
      const blank = body.search(/\r?\n\r?\n/);
      body = blank >= 0 ? body.slice(blank) : body;
    }
    out.push({ label, der: decodeBase64Strict(body, `PEM block "${label}"`) });
  }
  return out;
}

/** The single block of one of `labels`; throws `invalid` when there is none. */
export function pemDecodeOne(text: string, labels: readonly string[]): PemBlock {
  const block = pemDecodeAll(text).find((b) => labels.includes(b.label));
  if (!block) throw new DomainError('invalid', `no PEM block of type ${labels.join(' or ')} found`);
  return block;
}

/** Splits a bundle into its PEM blocks as text (each ending with a newline). */
export function splitPemBundle(text: string): string[] {
  return Array.from(text.matchAll(BLOCK), (m) => m[0] + '\n');
}

/** Whether the text looks like PEM rather than base64 DER. */
export const isPem = (text: string): boolean => text.includes('-----BEGIN ');
