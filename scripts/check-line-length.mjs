#!/usr/bin/env node
// Fails when a line of a tracked (or new, not ignored) text file is longer than 120 characters. Prettier keeps code
// within that width; this check also covers what it cannot break (strings, comments, Markdown tables) and the files it
// does not format (Go, Python, C). Usage: node scripts/check-line-length.mjs [files...] (default: the whole tree).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MAX = 120;

/**
 * Files not written by hand, and so not held to the width:
 * - package-lock.json: written by npm;
 * - docs/benchmarks.md: its tables are written by bench/lib/report.ts, one row per measurement;
 * - fixtures/ directories: test inputs and expected outputs kept byte for byte (Terraform state, JSON documents);
 * - src/db/migrations/: never edited once merged (ARCHITECTURE.md, Persistence), whatever their width;
 * - build output (dist/, build/, ui build) is not tracked and never listed.
 */
const EXCLUDED = [
  /^package-lock\.json$/,
  /^docs\/benchmarks\.md$/,
  /(^|\/)fixtures\//,
  /^src\/db\/migrations\//,
  /^(dist|build)\//,
];

const files =
  process.argv.length > 2
    ? process.argv.slice(2)
    : execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { encoding: 'utf8' })
        .split('\0')
        .filter((f) => f !== '');

let failures = 0;
for (const file of files) {
  if (EXCLUDED.some((re) => re.test(file))) continue;
  let text;
  try {
    text = readFileSync(file);
  } catch {
    continue; // deleted in the working tree
  }
  if (text.includes(0)) continue; // binary (images)
  const lines = text.toString('utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const length = [...lines[i].replace(/\r$/, '')].length;
    if (length > MAX) {
      failures++;
      console.log(`${file}:${i + 1}: ${length} characters`);
    }
  }
}
if (failures > 0) {
  console.log(`${failures} line(s) longer than ${MAX} characters`);
  process.exit(1);
}
