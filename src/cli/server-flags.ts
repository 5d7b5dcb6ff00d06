import { parseArgs } from 'node:util';
import { ConfigError, SETTINGS } from '../config.js';

const BOOLEAN_VALUES: Readonly<Record<string, boolean>> = { true: true, false: false };

/**
 * Parses `--flag value` settings of SETTINGS into config-file keys; returns leftovers too.
 * A boolean setting is on with `--flag`, and takes `--flag=false`, `--flag false` or
 * `--no-flag` to turn it off (its default may be on).
 */
export function parseSettingFlags(argv: string[]): { flags: Record<string, string | boolean>; positionals: string[] } {
  const flags: Record<string, string | boolean> = {};
  const booleans = new Map<string, string>();
  for (const s of SETTINGS) if (s.flag && s.boolean) booleans.set(s.flag, s.key);
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const m = /^--(no-)?([a-z0-9-]+)(?:=(.*))?$/.exec(arg);
    const key = m ? booleans.get(m[2] as string) : undefined;
    if (!m || key === undefined || (m[1] && m[3] !== undefined)) {
      rest.push(arg);
      continue;
    }
    let value = m[1] ? 'false' : (m[3] ?? 'true');
    const next = argv[i + 1];
    if (!m[1] && m[3] === undefined && next !== undefined && next in BOOLEAN_VALUES) {
      value = next;
      i++;
    }
    const parsed = BOOLEAN_VALUES[value];
    if (parsed === undefined) throw new ConfigError([`--${m[2]}: expected true or false, got "${value}"`]);
    flags[key] = parsed;
  }
  const options: Record<string, { type: 'string' }> = {};
  for (const s of SETTINGS) if (s.flag && !s.boolean) options[s.flag] = { type: 'string' };
  const { values, positionals } = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  for (const s of SETTINGS) {
    const v = (values as Record<string, string | undefined>)[s.flag];
    if (v !== undefined) flags[s.key] = v;
  }
  // --dev-root-token implies --dev, as in `vault server -dev -dev-root-token-id`.
  if (flags.dev_root_token !== undefined && flags.dev === undefined) flags.dev = true;
  return { flags, positionals };
}

/**
 * Every setting in three names (flag, environment variable, config-file key) and what it
 * does, as `--help` shows them. The config-file key is spelled out because it is not
 * always the flag's name (`--tls-cert` is `tls_cert_file`).
 */
export function settingsHelp(): string {
  const entries = SETTINGS.map((s) => {
    const flag = s.flag ? `--${s.flag}${s.boolean ? ' [true|false]' : ' <value>'}` : '(environment only)';
    const file =
      s.key === 'master_key' || s.key === 'other_master_keys' || s.key === 'config' ? '' : `  config key: ${s.key}`;
    const def = s.default !== undefined ? ` [default: ${s.default}]` : '';
    return `  ${flag.padEnd(36)} ${s.env}${file}\n${wrap(`${s.description}${def}`, 6, 110)}`;
  });
  return entries.join('\n');
}

function wrap(text: string, indent: number, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && indent + line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l) => `${' '.repeat(indent)}${l}`).join('\n');
}
