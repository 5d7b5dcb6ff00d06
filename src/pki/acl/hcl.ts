import { invalid } from '../../shared/errors.js';
import type { DomainError } from '../../shared/errors.js';

/**
 * A small parser for the part of HCL (version 1 syntax) that ACL policies use:
 * attributes (`key = value`), blocks with string labels (`path "pki/*" { ... }`),
 * strings with escapes, numbers, booleans, lists, object literals and the three
 * comment styles. Heredocs and interpolation are not supported: policies never need them.
 */

export type HclValue = string | number | boolean | HclValue[] | HclObject;
export interface HclObject {
  [key: string]: HclValue;
}

export interface HclAttribute {
  readonly kind: 'attribute';
  readonly name: string;
  readonly value: HclValue;
  readonly line: number;
}

export interface HclBlock {
  readonly kind: 'block';
  readonly type: string;
  readonly labels: readonly string[];
  readonly body: readonly HclEntry[];
  readonly line: number;
}

export type HclEntry = HclAttribute | HclBlock;

type TokenKind = 'ident' | 'string' | 'number' | 'punct' | 'eof';
interface Token {
  kind: TokenKind;
  text: string;
  line: number;
  col: number;
}

export function hclError(message: string, line: number, col?: number): DomainError {
  const where = col === undefined ? `line ${line}` : `line ${line}, column ${col}`;
  return invalid(`${where}: ${message}`);
}

const SIMPLE_ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
};

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const col = () => i - lineStart + 1;

  while (i < src.length) {
    const c = src[i] as string;
    if (c === '\n') {
      i++;
      line++;
      lineStart = i;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\ufeff') {
      i++;
      continue;
    }
    if (c === '#' || (c === '/' && src[i + 1] === '/')) {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && src[i + 1] === '*') {
      const startLine = line;
      const startCol = col();
      i += 2;
      while (i < src.length && !(src[i] === '*' && src[i + 1] === '/')) {
        if (src[i] === '\n') {
          line++;
          lineStart = i + 1;
        }
        i++;
      }
      if (i >= src.length) throw hclError('unterminated comment', startLine, startCol);
      i += 2;
      continue;
    }
    if ('{}[]=,:'.includes(c)) {
      tokens.push({ kind: 'punct', text: c, line, col: col() });
      i++;
      continue;
    }
    if (c === '"') {
      const startCol = col();
      i++;
      let out = '';
      for (;;) {
        const d = src[i];
        if (d === undefined || d === '\n') throw hclError('unterminated string', line, startCol);
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\') {
          const e = src[i + 1];
          if (e !== undefined && e in SIMPLE_ESCAPES) {
            out += SIMPLE_ESCAPES[e];
            i += 2;
            continue;
          }
          if (e === 'u' || e === 'U') {
            const len = e === 'u' ? 4 : 8;
            const hex = src.slice(i + 2, i + 2 + len);
            if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex))
              throw hclError(`invalid unicode escape in string`, line, col());
            out += String.fromCodePoint(parseInt(hex, 16));
            i += 2 + len;
            continue;
          }
          throw hclError(`invalid escape sequence "\\${e ?? ''}" in string`, line, col());
        }
        out += d;
        i++;
      }
      tokens.push({ kind: 'string', text: out, line, col: startCol });
      continue;
    }
    const num = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(src.slice(i, i + 64));
    if (num && (c === '-' || /\d/.test(c))) {
      tokens.push({ kind: 'number', text: num[0], line, col: col() });
      i += num[0].length;
      continue;
    }
    const ident = /^[A-Za-z_][A-Za-z0-9_.-]*/.exec(src.slice(i, i + 256));
    if (ident) {
      tokens.push({ kind: 'ident', text: ident[0], line, col: col() });
      i += ident[0].length;
      continue;
    }
    throw hclError(`unexpected character "${c}"`, line, col());
  }
  tokens.push({ kind: 'eof', text: '', line, col: col() });
  return tokens;
}

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.pos] as Token;
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'eof') this.pos++;
    return t;
  }

  private isPunct(text: string): boolean {
    const t = this.peek();
    return t.kind === 'punct' && t.text === text;
  }

  private expectPunct(text: string): Token {
    const t = this.next();
    if (t.kind !== 'punct' || t.text !== text)
      throw hclError(`expected "${text}" but found ${describe(t)}`, t.line, t.col);
    return t;
  }

  /** Parses entries until `}` (nested) or end of input (top level). */
  parseBody(nested: boolean): HclEntry[] {
    const entries: HclEntry[] = [];
    for (;;) {
      const t = this.peek();
      if (t.kind === 'eof') {
        if (nested) throw hclError('unexpected end of input: missing "}"', t.line, t.col);
        return entries;
      }
      if (nested && this.isPunct('}')) return entries;
      if (this.isPunct(',')) {
        // Object literals may separate items with commas.
        this.next();
        continue;
      }
      entries.push(this.parseEntry());
    }
  }

  private parseEntry(): HclEntry {
    const key = this.next();
    if (key.kind !== 'ident' && key.kind !== 'string')
      throw hclError(`expected a key but found ${describe(key)}`, key.line, key.col);
    if (this.isPunct('=') || this.isPunct(':')) {
      this.next();
      return { kind: 'attribute', name: key.text, value: this.parseValue(), line: key.line };
    }
    const labels: string[] = [];
    while (this.peek().kind === 'string' || this.peek().kind === 'ident') labels.push(this.next().text);
    if (!this.isPunct('{')) {
      const t = this.peek();
      throw hclError(`expected "=" or "{" after "${key.text}" but found ${describe(t)}`, t.line, t.col);
    }
    this.next();
    const body = this.parseBody(true);
    this.expectPunct('}');
    return { kind: 'block', type: key.text, labels, body, line: key.line };
  }

  private parseValue(): HclValue {
    const t = this.next();
    switch (t.kind) {
      case 'string':
        return t.text;
      case 'number':
        return Number(t.text);
      case 'ident':
        if (t.text === 'true') return true;
        if (t.text === 'false') return false;
        throw hclError(`unexpected identifier "${t.text}" where a value was expected`, t.line, t.col);
      case 'punct':
        if (t.text === '[') return this.parseListRest();
        if (t.text === '{') {
          const body = this.parseBody(true);
          this.expectPunct('}');
          return bodyToObject(body);
        }
        break;
      default:
        break;
    }
    throw hclError(`expected a value but found ${describe(t)}`, t.line, t.col);
  }

  private parseListRest(): HclValue[] {
    const items: HclValue[] = [];
    for (;;) {
      if (this.isPunct(']')) {
        this.next();
        return items;
      }
      items.push(this.parseValue());
      if (this.isPunct(',')) {
        this.next();
        continue;
      }
      if (!this.isPunct(']')) {
        const t = this.peek();
        throw hclError(`expected "," or "]" in list but found ${describe(t)}`, t.line, t.col);
      }
    }
  }

  finish(): void {
    const t = this.peek();
    if (t.kind !== 'eof') throw hclError(`unexpected ${describe(t)}`, t.line, t.col);
  }
}

function describe(t: Token): string {
  switch (t.kind) {
    case 'eof':
      return 'end of input';
    case 'string':
      return `string "${t.text}"`;
    default:
      return `"${t.text}"`;
  }
}

/**
 * Turns a body into a plain object: attributes become keys, a block becomes a nested
 * object under its type and then each of its labels (so `a "b" { c = 1 }` is `{a:{b:{c:1}}}`).
 * Later keys win, as in HCL object literals.
 */
export function bodyToObject(body: readonly HclEntry[]): HclObject {
  const out: HclObject = {};
  for (const entry of body) {
    if (entry.kind === 'attribute') {
      setKey(out, entry.name, entry.value);
      continue;
    }
    let target = out;
    const keys = [entry.type, ...entry.labels];
    for (const [i, k] of keys.entries()) {
      if (i === keys.length - 1) {
        setKey(target, k, bodyToObject(entry.body));
      } else {
        const existing = Object.hasOwn(target, k) ? target[k] : undefined;
        const child: HclObject = isHclObject(existing) ? existing : {};
        setKey(target, k, child);
        target = child;
      }
    }
  }
  return out;
}

/** Defines an own property, so keys such as "__proto__" stay plain data. */
function setKey(obj: HclObject, key: string, value: HclValue): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

export function isHclObject(v: HclValue | undefined): v is HclObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses HCL text into its top-level entries; throws DomainError('invalid') naming the line. */
export function parseHcl(text: string): HclEntry[] {
  const parser = new Parser(tokenize(text));
  const body = parser.parseBody(false);
  parser.finish();
  return body;
}
