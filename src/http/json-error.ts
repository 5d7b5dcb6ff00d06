/**
 * Where a JSON text first goes wrong: the offset of the first character that cannot
 * continue a JSON value (the text's length when it ends too early), found by a small
 * scanner of RFC 8259's grammar; -1 when the text is valid JSON. Used only after the
 * parser has refused the text, to say where (V8's own message gives no position for some
 * errors).
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const literal = (word: string) => {
    for (const ch of word) {
      if (text[i] !== ch) fail();
      i++;
    }
  };
  const string = () => {
    i++; // the opening quote
    for (;;) {
      if (i >= text.length) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) return void i++;
      if (c < 0x20) fail();
      if (c === 0x5c) {
        i++;
        const e = text[i];
        if (e === 'u') {
          for (let k = 1; k <= 4; k++) {
            if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) {
              i += k;
              fail();
            }
          }
          i += 5;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
        else fail();
      } else i++;
    }
  };
  const number = () => {
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === '-') fail();
    i += (m as RegExpExecArray)[0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        string();
        ws();
        if (text[i] !== ':') fail();
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail();
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail();
      }
    }
    if (c === '"') return string();
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return number();
    fail();
  };
  try {
    value();
    ws();
    if (i < text.length) fail();
    return -1;
  } catch (at) {
    if (typeof at !== 'number') throw at;
    return Math.min(at, text.length);
  }
}

/** Line and column (both from 1) of an offset. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/**
 * The detail of a 400 for a body that is not JSON: the content type it came with and
 * where it breaks, so that the caller can find the mistake without guessing.
 */
export function malformedJsonDetail(text: string, contentType: string | undefined, reason: string): string {
  const at = jsonErrorOffset(text);
  // Valid JSON the parser still refused (a __proto__ key): its own reason says why.
  const sent = `sent as ${contentType ?? 'no content type'}`;
  if (at < 0) return `${sent}, the body is refused: ${reason}`;
  const { line, column } = lineAndColumn(text, at);
  const what = at >= text.length ? 'it ends before the JSON value does' : `unexpected ${describeChar(text, at)}`;
  return `${sent}, the body breaks at position ${at} (line ${line}, column ${column}): ${what}`;
}

function describeChar(text: string, at: number): string {
  const c = text[at] as string;
  return /[\x21-\x7e]/.test(c)
    ? `'${c}'`
    : `character U+${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`;
}
