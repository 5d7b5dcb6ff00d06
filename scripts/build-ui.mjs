#!/usr/bin/env node
// Builds the web UI (ui/, Vite) into dist/ui, and only when it must: `npm ci` (prepare) and
// `npm start` (prestart) rebuild only when a file under ui/ or the lock file is newer than the
// last build. Without Vite (npm ci --omit=dev) it says so and the server answers /ui/ with 503.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const UI_STAMP = 'dist/.ui-build-stamp';

function newest(dir, acc = 0) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return acc;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    acc = e.isDirectory() ? newest(p, acc) : Math.max(acc, statSync(p).mtimeMs);
  }
  return acc;
}

/** Why the UI under `root` needs a build, or undefined when dist/ui is current. */
export function uiStaleReason(root) {
  const stamp = join(root, UI_STAMP);
  if (!existsSync(stamp) || !existsSync(join(root, 'dist/ui/index.html'))) return 'no build yet';
  const built = statSync(stamp).mtimeMs;
  const lock = join(root, 'package-lock.json');
  const latest = Math.max(newest(join(root, 'ui')), existsSync(lock) ? statSync(lock).mtimeMs : 0);
  return latest > built ? 'ui/ changed' : undefined;
}

function main() {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const reason = uiStaleReason(root);
  if (process.argv.includes('--if-stale') && !reason) return 0;
  const vite = join(root, 'node_modules/vite/bin/vite.js');
  if (!existsSync(vite)) {
    process.stderr.write(
      'strongroom: Vite is not installed (npm ci without --omit=dev installs it); the web UI is not built\n',
    );
    return 0;
  }
  process.stderr.write(`strongroom: building the web UI into dist/ui (${reason ?? 'requested'}) ...\n`);
  const r = spawnSync(process.execPath, [vite, 'build', '--config', join(root, 'ui/vite.config.ts')], {
    stdio: 'inherit',
    cwd: root,
  });
  if (r.status !== 0) return r.status ?? 1;
  mkdirSync(join(root, 'dist'), { recursive: true });
  writeFileSync(join(root, UI_STAMP), `${new Date().toISOString()}\n`);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main();
