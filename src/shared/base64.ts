/**
 * Strict base64 (RFC 4648 section 4: the standard alphabet, `=` padding to a multiple of four,
 * nothing else), decoded without a regular expression over the whole text: Node.js's decoder
 * skips what is not base64 and stops at padding, so any such character leaves fewer bytes
 * than the length and padding promise. The URL-safe `-` and `_`, which the decoder accepts,
 * are looked for separately. Null when `text` is not strict base64.
 */
export function decodeBase64Canonical(text: string): Buffer | null {
  const n = text.length;
  if (n % 4 !== 0) return null;
  let pad = 0;
  while (pad < n && text.charCodeAt(n - 1 - pad) === 0x3d) pad++;
  if (pad > 2) return null;
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== (n / 4) * 3 - pad) return null;
  if (text.includes('-') || text.includes('_')) return null;
  return bytes;
}
