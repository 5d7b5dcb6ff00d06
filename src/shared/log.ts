import pino from 'pino';
import type { Logger, LevelWithSilent } from 'pino';

/**
 * Paths never written to the log: credentials in headers, private keys and state
 * contents wherever they appear in a logged object.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-vault-token"]',
  'req.headers["x-secrets-token"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-vault-token"]',
  'headers["x-secrets-token"]',
  'token',
  '*.token',
  'private_key',
  '*.private_key',
  'privateKey',
  '*.privateKey',
  'state',
  '*.state',
  '*["json-state"]',
  'masterKey',
  '*.masterKey',
];

export function createLogger(level: LevelWithSilent, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? process.stdout,
  );
}

export type { Logger };

type Bindings = Record<string, unknown>;
type LogArgs = Parameters<Logger['info']>;
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger that makes its pino child only when something is logged at an
 * enabled level. Fastify asks for a child logger per request, and building one (its
 * bindings serialised, the redaction set up) cost more than most of what a busy request
 * does otherwise; at the usual levels almost every request logs nothing.
 */
export class LazyChildLogger {
  #real: Logger | undefined;
  #bindings: Bindings;

  constructor(
    private readonly parent: Logger,
    bindings: Bindings,
    private readonly opts: pino.ChildLoggerOptions = {},
  ) {
    this.#bindings = bindings;
  }

  /** The pino child, made on first use. */
  get real(): Logger {
    this.#real ??= this.parent.child(this.#bindings, this.opts);
    return this.#real;
  }

  get level(): string {
    return this.#real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  #log(level: Level, args: LogArgs): void {
    if (!this.parent.isLevelEnabled(level) && (this.#real === undefined || !this.#real.isLevelEnabled(level))) return;
    (this.real[level] as (...a: LogArgs) => void)(...args);
  }

  fatal(...args: LogArgs): void {
    this.#log('fatal', args);
  }
  error(...args: LogArgs): void {
    this.#log('error', args);
  }
  warn(...args: LogArgs): void {
    this.#log('warn', args);
  }
  info(...args: LogArgs): void {
    this.#log('info', args);
  }
  debug(...args: LogArgs): void {
    this.#log('debug', args);
  }
  trace(...args: LogArgs): void {
    this.#log('trace', args);
  }
  silent(): void {}

  isLevelEnabled(level: string): boolean {
    return (this.#real ?? this.parent).isLevelEnabled(level);
  }

  child(bindings: Bindings, opts?: pino.ChildLoggerOptions): Logger {
    return this.real.child(bindings, opts);
  }

  /** Adds bindings in place (pino's setBindings), before or after the child exists. */
  setBindings(bindings: Bindings): void {
    if (this.#real) this.#real.setBindings(bindings);
    else this.#bindings = { ...this.#bindings, ...bindings };
  }

  bindings(): Bindings {
    return this.#real ? this.#real.bindings() : { ...this.parent.bindings(), ...this.#bindings };
  }
}
