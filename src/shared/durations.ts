import { invalid } from './errors.js';

const UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600, d: 86400 };

/**
 * Parses a duration the way Vault and Go do ("72h", "1h30m", "90s", "15d") or a bare
 * number of seconds, into whole seconds.
 */
export function parseDurationSeconds(input: string | number, field = 'duration'): number {
  if (typeof input === 'number') {
    if (!Number.isFinite(input) || input < 0) throw invalid(`invalid ${field}: ${input}`, field);
    return Math.floor(input);
  }
  const s = input.trim();
  if (s === '') return 0;
  if (/^\d+$/.test(s)) return Number(s);
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/gy;
  let total = 0;
  let consumed = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
    consumed = re.lastIndex;
  }
  if (consumed !== s.length || consumed === 0) throw invalid(`invalid ${field}: "${input}"`, field);
  return Math.floor(total);
}

/** Parses a byte size such as "10MB", "512k", "1gib" or a plain number of bytes. */
export function parseByteSize(input: string | number, field = 'size'): number {
  if (typeof input === 'number') return Math.floor(input);
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$/i.exec(input);
  if (!m) throw invalid(`invalid ${field}: "${input}"`, field);
  const unit = (m[2] ?? '').toLowerCase().replace(/i?b$/, '');
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[unit];
  if (mult === undefined) throw invalid(`invalid ${field}: "${input}"`, field);
  return Math.floor(Number(m[1]) * mult);
}
