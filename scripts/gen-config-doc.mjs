#!/usr/bin/env node
// Regenerates the settings list of docs/configuration.md (between the settings:start and settings:end markers) from
// src/config.ts. Run after `npm run build`, then `npx prettier --write docs/configuration.md`.
import { readFileSync, writeFileSync } from 'node:fs';
const { SETTINGS } = await import(new URL('../dist/src/config.js', import.meta.url));
const path = new URL('../docs/configuration.md', import.meta.url);
const doc = readFileSync(path, 'utf8');
const START = '<!-- settings:start -->';
const END = '<!-- settings:end -->';
const start = doc.indexOf(START);
const end = doc.indexOf(END);
if (start < 0 || end < start) throw new Error(`docs/configuration.md lacks the ${START} … ${END} markers`);
const items = SETTINGS.map((s) => {
  const fileKey = s.key === 'master_key' || s.key === 'config' ? 'not in the config file' : `file key \`${s.key}\``;
  const where = [s.flag ? `\`--${s.flag}\`` : 'no flag', `\`${s.env}\``, fileKey];
  if (s.default !== undefined) where.push(`default \`${s.default}\``);
  return `- **${s.key}** (${where.join(', ')}): ${s.description}`;
});
writeFileSync(path, `${doc.slice(0, start + START.length)}\n\n${items.join('\n')}\n\n${doc.slice(end)}`);
