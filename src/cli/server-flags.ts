import { parseArgs } from 'node:util';
import { SETTINGS } from '../config.js';

/** Parses `--flag value` settings of SETTINGS into config-file keys; returns leftovers too. */
export function parseSettingFlags(argv: string[]): { flags: Record<string, string | boolean>; positionals: string[] } {
  const options: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const s of SETTINGS) if (s.flag) options[s.flag] = { type: s.boolean ? 'boolean' : 'string' };
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  const flags: Record<string, string | boolean> = {};
  for (const s of SETTINGS) {
    const v = (values as Record<string, string | boolean | undefined>)[s.flag];
    if (v !== undefined) flags[s.key] = v;
  }
  // --dev-root-token implies --dev, as in `vault server -dev -dev-root-token-id`.
  if (flags.dev_root_token !== undefined && flags.dev === undefined) flags.dev = true;
  return { flags, positionals };
}

export function settingsHelp(): string {
  const lines = SETTINGS.map((s) => {
    const flag = s.flag ? `--${s.flag}${s.boolean ? '' : ' <value>'}` : '(env only)';
    const def = s.default !== undefined ? ` [default: ${s.default}]` : '';
    return `  ${flag.padEnd(30)} ${s.env.padEnd(30)} ${s.description}${def}`;
  });
  return lines.join('\n');
}
