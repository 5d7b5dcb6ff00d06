#!/usr/bin/env node
// Regenerates the settings table of docs/configuration.md from src/config.ts (run after `npm run build`).
import { readFileSync, writeFileSync } from 'node:fs';
const { SETTINGS } = await import(new URL('../dist/src/config.js', import.meta.url));
const path = new URL('../docs/configuration.md', import.meta.url);
const doc = readFileSync(path, 'utf8');
const rows = SETTINGS.map((s) => {
  const flag = s.flag ? `\`--${s.flag}\`` : '(none)';
  const key =
    s.key === 'master_key' || s.key === 'other_master_keys' || s.key === 'config' ? '(not allowed)' : `\`${s.key}\``;
  const def = s.default !== undefined ? `\`${s.default}\`` : '';
  return `| ${flag} | \`${s.env}\` | ${key} | ${def} | ${s.description} |`;
});
const table = ['| Flag | Environment | Config file key | Default | Meaning |', '|---|---|---|---|---|', ...rows].join(
  '\n',
);
const start = doc.indexOf('| Flag |');
const end = doc.indexOf('\n\n', start);
writeFileSync(path, doc.slice(0, start) + table + (end < 0 ? '\n' : doc.slice(end)));
