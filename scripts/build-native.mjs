// Builds the optional native addon (native/, binding.gyp) during `npm ci` / `npm install`.
// Without it the server still runs and checks certificate requests with node:crypto, more slowly,
// so a machine without a C compiler gets a warning, not a failed install.
// STRONGROOM_REQUIRE_NATIVE=1 turns a failed build into a failed install (CI sets it).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const required = process.env.STRONGROOM_REQUIRE_NATIVE === '1';

function nodeGyp() {
  // npm names its bundled node-gyp for install scripts; otherwise look beside npm itself.
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
  ];
  return candidates.find((c) => c && existsSync(c));
}

const gyp = nodeGyp();
const args = ['rebuild'];
// Build against the headers installed with this Node.js when they are there, instead of downloading them.
const prefix = join(dirname(process.execPath), '..');
if (!process.env.npm_config_nodedir && existsSync(join(prefix, 'include/node/node_api.h')))
  args.push(`--nodedir=${prefix}`);
const r = gyp ? spawnSync(process.execPath, [gyp, ...args], { cwd: root, stdio: 'inherit' }) : null;
if (!r || r.status !== 0) {
  const why = gyp ? `node-gyp exited with ${r?.status ?? r?.signal}` : 'node-gyp was not found';
  console.warn(
    `strongroom: the native addon was not built (${why}); certificate requests will be checked with ` +
      `node:crypto, which is slower.`,
  );
  process.exit(required ? 1 : 0);
}
