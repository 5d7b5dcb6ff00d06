import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Reads the TypeScript sources (not the build) and checks the dependency rule of ARCHITECTURE.md.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const src = join(root, 'src');

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

interface Import {
  spec: string;
  typeOnly: boolean;
  /** Resolved path relative to src/ for project imports. */
  target?: string;
}

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const out: Import[] = [];
  const re = /^\s*(?:import|export)\s+(type\s+)?(?:[^'"]*?\s+from\s+)?['"]([^'"]+)['"]/gm;
  for (const m of text.matchAll(re)) {
    const spec = m[2] as string;
    const imp: Import = { spec, typeOnly: Boolean(m[1]) };
    if (spec.startsWith('.')) imp.target = relative(src, resolve(dirname(file), spec));
    out.push(imp);
  }
  for (const m of text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    const spec = m[1] as string;
    out.push({
      spec,
      typeOnly: false,
      target: spec.startsWith('.') ? relative(src, resolve(dirname(file), spec)) : undefined,
    });
  }
  return out;
}

const files = walk(src).filter((f) => !f.endsWith('.test.ts'));
const rel = (f: string) => relative(src, f);
const area = (p: string) => p.split('/')[0] as string;

describe('the dependency rule', () => {
  it('shared/ imports nothing else of the project', () => {
    for (const f of files.filter((f) => area(rel(f)) === 'shared')) {
      for (const i of importsOf(f)) if (i.target) assert.equal(area(i.target), 'shared', `${rel(f)} imports ${i.spec}`);
    }
  });

  it('the foundation (db, blob, jobs, http, secrets, admin, audit) knows no product', () => {
    for (const f of files.filter((f) =>
      ['db', 'blob', 'jobs', 'http', 'secrets', 'admin', 'audit'].includes(area(rel(f))),
    )) {
      for (const i of importsOf(f))
        if (i.target) assert.ok(!['tfe', 'pki'].includes(area(i.target)), `${rel(f)} imports ${i.spec}`);
    }
  });

  it('the two products never import each other', () => {
    for (const f of files) {
      const a = area(rel(f));
      if (a !== 'tfe' && a !== 'pki') continue;
      const other = a === 'tfe' ? 'pki' : 'tfe';
      for (const i of importsOf(f)) if (i.target) assert.notEqual(area(i.target), other, `${rel(f)} imports ${i.spec}`);
    }
  });

  it('production code never imports tests or benchmarks', () => {
    for (const f of files) {
      for (const i of importsOf(f)) if (i.target) assert.ok(!i.target.startsWith('..'), `${rel(f)} imports ${i.spec}`);
    }
  });

  it('routes, serializers and plugins never reach repos or the database', () => {
    const product = (f: string) => ['tfe', 'pki'].includes(area(rel(f)));
    for (const f of files.filter((f) => product(f) && /-(routes|jsonapi|plugin)\.ts$/.test(f))) {
      for (const i of importsOf(f)) {
        if (i.typeOnly) continue;
        assert.ok(
          !(i.target && (/-repo$/.test(i.target.replace(/\.js$/, '')) || area(i.target) === 'db')),
          `${rel(f)} imports ${i.spec}`,
        );
        assert.notEqual(i.spec, 'kysely', `${rel(f)} uses kysely`);
      }
    }
  });

  it('only repos, db/, jobs/ and blob/ run queries with kysely (others may name its types)', () => {
    const allowed = (p: string) => /-repo\.ts$/.test(p) || ['db', 'jobs', 'blob'].includes(area(p));
    for (const f of files) {
      if (allowed(rel(f))) continue;
      for (const i of importsOf(f))
        if (i.spec === 'kysely' && !i.typeOnly) assert.fail(`${rel(f)} imports kysely values`);
    }
  });

  it('reads process.env only in config.ts and the process entry (cli.ts)', () => {
    for (const f of files.filter((f) => rel(f) !== 'config.ts' && rel(f) !== 'cli.ts')) {
      assert.ok(!/process\.env\b/.test(readFileSync(f, 'utf8')), `${rel(f)} reads process.env`);
    }
  });

  it('takes time from the injected clock in domain files, services and jobs', () => {
    const timed = files.filter((f) => /-(service|repo)\.ts$|-job\.ts$/.test(f));
    for (const f of timed) {
      const text = readFileSync(f, 'utf8');
      assert.ok(!/new Date\(\)|Date\.now\(\)/.test(text), `${rel(f)} reads the wall clock`);
    }
  });
});
