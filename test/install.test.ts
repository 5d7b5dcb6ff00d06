import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(import.meta.url);
const semver = require('semver') as {
  subset(sub: string, sup: string): boolean;
  satisfies(version: string, range: string): boolean;
};

interface Lock {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; dev?: boolean }>;
}
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  scripts: Record<string, string>;
};
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as Lock;

describe('installing and starting', () => {
  it('supports only Node.js versions that every locked package accepts (npm ci shows no EBADENGINE)', () => {
    const ours = pkg.engines.node;
    const refusing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const theirs = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (path === '' || !theirs) continue;
      if (!semver.subset(ours, theirs)) refusing.push(`${path}@${entry.version}: node ${theirs}`);
    }
    assert.deepEqual(refusing, [], `packages whose engines exclude part of ${ours}`);
    assert.ok(semver.satisfies(process.version, ours), `this Node.js (${process.version}) is in ${ours}`);
  });

  it('states the supported Node.js versions in the README as package.json does', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    assert.equal(pkg.engines.node, '^20.19.0');
    assert.match(readme, /## Supported Node\.js versions\n\nNode\.js 20, from 20\.19\.0 on/);
    assert.match(readme, /You need Node\.js 20 \(20\.19 or later;/);
  });

  it('builds the server alone (and the web UI) on npm ci and npm start, and only when dist is stale', () => {
    const both = 'node scripts/build-server.mjs --if-stale && node scripts/build-ui.mjs --if-stale';
    assert.equal(pkg.scripts['prepare'], both);
    assert.equal(pkg.scripts['prestart'], both);
    const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as {
      include: string[];
      exclude: string[];
    };
    assert.deepEqual(build.include, ['src/**/*.ts'], 'no tests or benchmarks');
    assert.deepEqual(build.exclude, ['src/**/*.test.ts']);
  });

  it('calls dist stale when missing, or older than a source file, a tsconfig or the lock file', async () => {
    const { staleReason, STAMP } = (await import(join(ROOT, 'scripts/build-server.mjs'))) as {
      staleReason(root: string): string | undefined;
      STAMP: string;
    };
    const root = mkdtempSync(join(tmpdir(), 'build-stale-'));
    try {
      mkdirSync(join(root, 'src/cli'), { recursive: true });
      mkdirSync(join(root, 'dist/src'), { recursive: true });
      const at = (path: string, seconds: number) => {
        writeFileSync(join(root, path), '');
        utimesSync(join(root, path), seconds, seconds);
      };
      at('src/cli/a.ts', 1000);
      at('src/cli/a.test.ts', 3000);
      at('tsconfig.json', 1000);
      assert.equal(staleReason(root), 'no build yet');
      at('dist/src/cli.js', 2000);
      at(STAMP, 2000);
      assert.equal(staleReason(root), undefined, 'a newer test file does not make the server stale');
      at('src/cli/a.ts', 2500);
      assert.equal(staleReason(root), 'src/cli/a.ts changed');
      // The root as the script finds its own (a URL's path ends with a slash).
      assert.equal(staleReason(`${root}/`), 'src/cli/a.ts changed');
      at(STAMP, 2600);
      assert.equal(staleReason(root), undefined);
      at('package-lock.json', 2700);
      assert.equal(staleReason(root), 'package-lock.json changed');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
