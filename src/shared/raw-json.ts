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
      splicing.texts.push(this.text);
      return `${splicing.mark}${splicing.texts.length - 1}`;
    }
    return this.parse();
  }
}

let splicing: { mark: string; texts: string[] } | null = null;

/** JSON.stringify of `value`, with the text of every RawJson in it spliced in as it is. */
export function stringifyWithRaw(value: unknown): string {
  const outer = splicing;
  // A marker no string in the value can equal: a control character (escaped in the output) and a fresh nonce.
  const nonce = randomBytes(9).toString('base64url');
  const current = { mark: `\u0000${nonce}:`, texts: [] as string[] };
  splicing = current;
  let out: string;
  try {
    out = JSON.stringify(value);
  } finally {
    splicing = outer;
  }
  if (current.texts.length === 0) return out;
  const marker = new RegExp(`"\\\\u0000${nonce}:(\\d+)"`, 'g');
  return out.replace(marker, (_, i: string) => current.texts[Number(i)] as string);
}
