/**
 * Incremental, validating JSON scanner over byte chunks.
 *
 * State files can be hundreds of megabytes, almost all of it resource `attributes`
 * that we never look at. The scanner lets its consumer skip a value (validated but
 * neither decoded nor kept) or capture a small value whole, so memory stays bounded
 * by what the consumer keeps, not by the file. The whole input is still checked
 * against the JSON grammar, so a broken file fails the same way wherever the damage is.
 */

export interface JsonEvents {
  startObject(): void;
  endObject(): void;
  startArray(): void;
  endArray(): void;
  key(name: string): void;
  scalar(value: string | number | boolean | null): void;
}

export interface JsonScannerLimits {
  /** Deepest container nesting accepted. */
  maxDepth?: number;
  /** Longest run of whitespace accepted anywhere; stops whitespace bombs early. */
  maxWhitespaceRun?: number;
  /** Longest string decoded for the consumer (skipped strings are not limited). */
  maxStringBytes?: number;
}

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
    readonly truncated: boolean,
  ) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

// Scanner states.
const VALUE = 0;
const VALUE_OR_END = 1;
const KEY_OR_END = 2;
const KEY = 3;
const COLON = 4;
const COMMA_OR_END = 5;
const DONE = 6;
const STRING = 7;
const NUMBER = 8;
const LITERAL = 9;

// Event routing modes.
const EMIT = 0;
const QUIET = 1;
const CAPTURE = 2;

const OBJ = 1;
const ARR = 2;

const LITERALS: Record<number, [Uint8Array, boolean | null]> = {
  0x74: [Buffer.from('true'), true],
  0x66: [Buffer.from('false'), false],
  0x6e: [Buffer.from('null'), null],
};

type Scalar = string | number | boolean | null;

/** Builds plain JS values for captured subtrees. */
class Assembler {
  private stack: (Record<string, unknown> | unknown[])[] = [];
  private keys: (string | null)[] = [];
  private pendingKey: string | null = null;
  result: unknown = undefined;

  reset(): void {
    this.stack = [];
    this.keys = [];
    this.pendingKey = null;
    this.result = undefined;
  }

  add(v: unknown): void {
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) this.result = v;
    else if (Array.isArray(top)) top.push(v);
    else {
      const k = this.pendingKey as string;
      // A plain assignment to "__proto__" would change the prototype instead of adding a property.
      if (k === '__proto__')
        Object.defineProperty(top, k, { value: v, enumerable: true, writable: true, configurable: true });
      else top[k] = v;
    }
  }

  open(container: Record<string, unknown> | unknown[]): void {
    this.add(container);
    this.stack.push(container);
    this.keys.push(this.pendingKey);
  }

  close(): void {
    this.stack.pop();
    this.pendingKey = this.keys.pop() ?? null;
  }

  key(k: string): void {
    this.pendingKey = k;
  }
}

export class JsonScanner {
  private state = VALUE;
  private kinds = new Uint8Array(64);
  private depth = 0;
  private offset = 0;
  private wsRun = 0;
  private readonly maxDepth: number;
  private readonly maxWs: number;
  private readonly maxString: number;

  private mode = EMIT;
  private modeDepth = 0;
  private pending = EMIT;
  private captureCb: ((v: unknown) => void) | null = null;
  private pendingCb: ((v: unknown) => void) | null = null;
  private readonly asm = new Assembler();

  // Current string or number token.
  private tokIsKey = false;
  private tokQuiet = false;
  private tokParts: Buffer[] = [];
  private tokLen = 0;
  private strEscaped = false;
  private esc = 0; // 0 none, 1 after backslash, 2..5 hex digits left + 1
  private numState = 0;
  private lit: Uint8Array | null = null;
  private litValue: boolean | null = null;
  private litPos = 0;

  constructor(
    private readonly events: JsonEvents,
    limits: JsonScannerLimits = {},
  ) {
    this.maxDepth = limits.maxDepth ?? 512;
    this.maxWs = limits.maxWhitespaceRun ?? 1024 * 1024;
    this.maxString = limits.maxStringBytes ?? 64 * 1024 * 1024;
  }

  /** Bytes consumed so far. */
  get position(): number {
    return this.offset;
  }

  /** The next value (announced by the key just received) is validated but not reported. */
  skipValue(): void {
    this.pending = QUIET;
  }

  /** The next value is built whole and handed to `cb` instead of being reported as events. */
  captureValue(cb: (v: unknown) => void): void {
    this.pending = CAPTURE;
    this.pendingCb = cb;
  }

  write(chunk: Uint8Array): void {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const n = b.length;
    let i = 0;
    while (i < n) {
      const st = this.state;
      if (st === STRING) i = this.scanString(b, i);
      else if (st === NUMBER) i = this.scanNumber(b, i);
      else if (st === LITERAL) i = this.scanLiteral(b, i);
      else {
        const c = b[i] as number;
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
          let j = i + 1;
          while (j < n) {
            const d = b[j];
            if (d !== 0x20 && d !== 0x0a && d !== 0x0d && d !== 0x09) break;
            j++;
          }
          this.wsRun += j - i;
          if (this.wsRun > this.maxWs) {
            throw this.fail(`more than ${this.maxWs} consecutive whitespace bytes`, j - this.wsRun + this.maxWs);
          }
          i = j;
          continue;
        }
        this.wsRun = 0;
        // A number's first byte is left for scanNumber.
        if (this.structural(c, i)) i++;
      }
    }
    this.offset += n;
  }

  /** Signals end of input; throws if the document is incomplete. */
  end(): void {
    if (this.state === NUMBER && this.depth === 0 && this.numberComplete()) {
      this.finishNumber(Buffer.alloc(0), 0, 0);
    }
    if (this.state === DONE) return;
    const where =
      this.state === STRING
        ? 'inside a string'
        : this.depth > 0
          ? `inside a container nested ${this.depth} deep`
          : 'inside a value';
    if (this.offset === 0 || (this.state === VALUE && this.depth === 0)) {
      throw new JsonSyntaxError('document is empty', this.offset, true);
    }
    throw new JsonSyntaxError(`document is truncated: input ended ${where} at byte ${this.offset}`, this.offset, true);
  }

  private fail(what: string, i: number): JsonSyntaxError {
    return new JsonSyntaxError(`${what} at byte ${this.offset + i}`, this.offset + i, false);
  }

  private unexpected(c: number, i: number, expected: string): JsonSyntaxError {
    const shown = c >= 0x21 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, '0')}`;
    return this.fail(`unexpected ${shown}, expected ${expected},`, i);
  }

  private structural(c: number, i: number): boolean {
    switch (this.state) {
      case VALUE_OR_END:
      case VALUE:
        if (c === 0x5d && this.state === VALUE_OR_END) {
          this.close(ARR);
          return true;
        }
        return this.startValue(c, i);
      case KEY_OR_END:
      case KEY:
        if (c === 0x7d && this.state === KEY_OR_END) {
          this.close(OBJ);
          return true;
        }
        if (c !== 0x22) throw this.unexpected(c, i, 'a property name in double quotes');
        this.startToken(true, this.mode === QUIET);
        this.state = STRING;
        return true;
      case COLON:
        if (c !== 0x3a) throw this.unexpected(c, i, "':'");
        this.state = VALUE;
        return true;
      case COMMA_OR_END: {
        const top = this.kinds[this.depth - 1];
        if (c === 0x2c) this.state = top === OBJ ? KEY : VALUE;
        else if (c === 0x7d && top === OBJ) this.close(OBJ);
        else if (c === 0x5d && top === ARR) this.close(ARR);
        else throw this.unexpected(c, i, top === OBJ ? "',' or '}'" : "',' or ']'");
        return true;
      }
      default:
        throw this.unexpected(c, i, 'the end of the document');
    }
  }

  private beginValue(): void {
    if (this.pending !== EMIT) {
      if (this.mode === EMIT) {
        this.mode = this.pending;
        this.modeDepth = this.depth;
        if (this.pending === CAPTURE) {
          this.captureCb = this.pendingCb;
          this.asm.reset();
        }
      }
      this.pending = EMIT;
      this.pendingCb = null;
    }
  }

  private startValue(c: number, i: number): boolean {
    if (c === 0x7b || c === 0x5b) {
      this.beginValue();
      const kind = c === 0x7b ? OBJ : ARR;
      if (this.depth >= this.maxDepth) throw this.fail(`nesting deeper than ${this.maxDepth} levels`, i);
      if (this.depth === this.kinds.length) {
        const k = new Uint8Array(this.kinds.length * 2);
        k.set(this.kinds);
        this.kinds = k;
      }
      this.kinds[this.depth++] = kind;
      if (this.mode === EMIT) {
        if (kind === OBJ) this.events.startObject();
        else this.events.startArray();
      } else if (this.mode === CAPTURE) this.asm.open(kind === OBJ ? {} : []);
      this.state = kind === OBJ ? KEY_OR_END : VALUE_OR_END;
      return true;
    }
    if (c === 0x22) {
      this.beginValue();
      this.startToken(false, this.mode === QUIET);
      this.state = STRING;
      return true;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      this.beginValue();
      this.startToken(false, this.mode === QUIET);
      this.numState = 0;
      this.state = NUMBER;
      return false;
    }
    const lit = LITERALS[c];
    if (lit) {
      this.beginValue();
      this.lit = lit[0];
      this.litValue = lit[1];
      this.litPos = 1;
      this.state = LITERAL;
      return true;
    }
    throw this.unexpected(c, i, 'a value');
  }

  private close(kind: number): void {
    this.depth--;
    if (this.mode === EMIT) {
      if (kind === OBJ) this.events.endObject();
      else this.events.endArray();
    } else if (this.mode === CAPTURE) this.asm.close();
    this.valueDone();
  }

  private valueDone(): void {
    this.state = this.depth === 0 ? DONE : COMMA_OR_END;
    if (this.mode !== EMIT && this.depth === this.modeDepth) {
      const cb = this.mode === CAPTURE ? this.captureCb : null;
      this.mode = EMIT;
      this.captureCb = null;
      if (cb) {
        const v = this.asm.result;
        this.asm.reset();
        cb(v);
      }
    }
  }

  private deliver(v: Scalar): void {
    if (this.mode === EMIT) this.events.scalar(v);
    else if (this.mode === CAPTURE) this.asm.add(v);
    this.valueDone();
  }

  private startToken(isKey: boolean, quiet: boolean): void {
    this.tokIsKey = isKey;
    this.tokQuiet = quiet;
    this.tokParts = [];
    this.tokLen = 0;
    this.strEscaped = false;
    this.esc = 0;
  }

  private collect(b: Buffer, from: number, to: number, limit: number): void {
    if (this.tokQuiet || to <= from) return;
    this.tokLen += to - from;
    if (this.tokLen > limit) throw this.fail(`token longer than ${limit} bytes`, to);
    // Copy: the caller may reuse its chunk buffer after write() returns.
    this.tokParts.push(Buffer.from(b.subarray(from, to)));
  }

  private tokenText(b: Buffer, from: number, to: number): string {
    if (this.tokParts.length === 0) return b.toString('utf8', from, to);
    if (to > from) this.tokParts.push(b.subarray(from, to));
    return Buffer.concat(this.tokParts).toString('utf8');
  }

  private scanString(b: Buffer, i: number): number {
    const n = b.length;
    let j = i;
    while (j < n) {
      if (this.esc === 0) {
        while (j < n) {
          const c = b[j] as number;
          if (c === 0x22 || c === 0x5c || c < 0x20) break;
          j++;
        }
        if (j === n) break;
        const c = b[j] as number;
        if (c === 0x22) {
          this.finishString(b, i, j);
          return j + 1;
        }
        if (c < 0x20) throw this.fail('control character in string', j);
        this.esc = 1;
        this.strEscaped = true;
        j++;
      } else if (this.esc === 1) {
        const c = b[j] as number;
        if (c === 0x75) this.esc = 5;
        else if (
          c === 0x22 ||
          c === 0x5c ||
          c === 0x2f ||
          c === 0x62 ||
          c === 0x66 ||
          c === 0x6e ||
          c === 0x72 ||
          c === 0x74
        )
          this.esc = 0;
        else throw this.fail('invalid escape sequence in string', j);
        j++;
      } else {
        const c = b[j] as number;
        const hex = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
        if (!hex) throw this.fail('invalid \\u escape in string', j);
        this.esc = this.esc === 2 ? 0 : this.esc - 1;
        j++;
      }
    }
    this.collect(b, i, n, this.maxString);
    return n;
  }

  private finishString(b: Buffer, from: number, to: number): void {
    if (this.tokQuiet) {
      if (this.tokIsKey) this.state = COLON;
      else this.valueDone();
      return;
    }
    if (this.tokLen + (to - from) > this.maxString) throw this.fail(`string longer than ${this.maxString} bytes`, to);
    let s = this.tokenText(b, from, to);
    if (this.strEscaped) s = JSON.parse(`"${s}"`) as string;
    this.tokParts = [];
    if (this.tokIsKey) {
      this.state = COLON;
      if (this.mode === EMIT) this.events.key(s);
      else if (this.mode === CAPTURE) this.asm.key(s);
    } else this.deliver(s);
  }

  private numberComplete(): boolean {
    const s = this.numState;
    return s === 2 || s === 3 || s === 5 || s === 8;
  }

  private scanNumber(b: Buffer, i: number): number {
    const n = b.length;
    let j = i;
    for (; j < n; j++) {
      const c = b[j] as number;
      const digit = c >= 0x30 && c <= 0x39;
      switch (this.numState) {
        case 0:
          this.numState = c === 0x2d ? 1 : c === 0x30 ? 2 : 3;
          continue;
        case 1:
          if (!digit) throw this.fail('invalid number', j);
          this.numState = c === 0x30 ? 2 : 3;
          continue;
        case 2:
          if (c === 0x2e) {
            this.numState = 4;
            continue;
          }
          if (c === 0x65 || c === 0x45) {
            this.numState = 6;
            continue;
          }
          break;
        case 3:
          if (digit) continue;
          if (c === 0x2e) {
            this.numState = 4;
            continue;
          }
          if (c === 0x65 || c === 0x45) {
            this.numState = 6;
            continue;
          }
          break;
        case 4:
          if (!digit) throw this.fail('invalid number', j);
          this.numState = 5;
          continue;
        case 5:
          if (digit) continue;
          if (c === 0x65 || c === 0x45) {
            this.numState = 6;
            continue;
          }
          break;
        case 6:
          if (c === 0x2b || c === 0x2d) {
            this.numState = 7;
            continue;
          }
          if (!digit) throw this.fail('invalid number', j);
          this.numState = 8;
          continue;
        case 7:
          if (!digit) throw this.fail('invalid number', j);
          this.numState = 8;
          continue;
        case 8:
          if (digit) continue;
          break;
      }
      // A byte that cannot continue the number ends it; it is not consumed here.
      if (!this.numberComplete()) throw this.fail('invalid number', j);
      this.finishNumber(b, i, j);
      return j;
    }
    this.collect(b, i, n, 1024);
    return n;
  }

  private finishNumber(b: Buffer, from: number, to: number): void {
    if (this.tokQuiet) {
      this.valueDone();
      return;
    }
    if (this.tokLen + (to - from) > 1024) throw this.fail('number longer than 1024 bytes', to);
    this.deliver(Number(this.tokenText(b, from, to)));
    this.tokParts = [];
  }

  private scanLiteral(b: Buffer, i: number): number {
    const lit = this.lit as Uint8Array;
    const n = b.length;
    let j = i;
    while (j < n && this.litPos < lit.length) {
      if (b[j] !== lit[this.litPos]) throw this.fail('invalid literal', j);
      this.litPos++;
      j++;
    }
    if (this.litPos === lit.length) this.deliver(this.litValue);
    return j;
  }
}
