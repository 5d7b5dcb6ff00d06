/**
 * JSON text kept as text: a stored document (a state version's resource list, say) that an
 * answer embeds without parsing it and serializing it again. `stringifyWithRaw` splices the
 * text into the output; a plain `JSON.stringify` still gives the right answer, by parsing it.
 */
import { randomBytes } from 'node:crypto';

export class RawJson {
  constructor(readonly text: string) {}

  /** The value, parsed on each call: for code that needs it as data. */
  parse(): unknown {
    return JSON.parse(this.text);
  }

  toJSON(): unknown {
    if (splicing) {
      // A marker no string in the value can equal: a control character (escaped in the output) and a fresh nonce.
      splicing.nonce ??= randomBytes(9).toString('base64url');
      splicing.texts.push(this.text);
      return `\u0000${splicing.nonce}:${splicing.texts.length - 1}`;
    }
    return this.parse();
  }
}

/**
 * The stringifyWithRaw call under way: its nonce (made on the first RawJson met) and the texts
 * to splice. Set and restored around one synchronous JSON.stringify, so no other caller (no
 * other server in the process) ever sees it; toJSON has no other way to reach its caller.
 */
let splicing: { nonce?: string; texts: string[] } | null = null;

/** JSON.stringify of `value`, with the text of every RawJson in it spliced in as it is. */
export function stringifyWithRaw(value: unknown): string {
  const outer = splicing;
  const current: { nonce?: string; texts: string[] } = { texts: [] };
  splicing = current;
  let out: string;
  try {
    out = JSON.stringify(value);
  } finally {
    splicing = outer;
  }
  if (current.nonce === undefined) return out;
  const marker = new RegExp(`"\\\\u0000${current.nonce}:(\\d+)"`, 'g');
  return out.replace(marker, (_, i: string) => current.texts[Number(i)] as string);
}
