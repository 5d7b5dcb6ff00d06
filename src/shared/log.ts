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
