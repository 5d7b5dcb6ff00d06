// The benchmark harness: `npm run bench -- <scenario>|all|list [options]` (see docs/benchmarks.md).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { docsMarkdown, keptSections, printResult, summaryLines } from './lib/report.js';
import { useLoadGenerator } from './lib/load.js';
import { pkiRoleSettings } from './lib/pki.js';
import { ProcessGroup } from './lib/processes.js';
import { startStrongroom } from './lib/strongroom.js';
import type { Strongroom } from './lib/strongroom.js';
import { Skip } from './lib/types.js';
import type { RunContext, RunOptions, Scenario, ScenarioResult } from './lib/types.js';
import { wrkAvailable } from './lib/wrk.js';
import { SCENARIOS } from './scenarios/all-scenarios.js';

const USAGE = `Usage: npm run bench -- <scenario>|all|list [options]

Options:
  --connections N     concurrent connections (default: each scenario's own, mostly 64)
  --duration S        seconds per measured run (default 5; 1 with --smoke)
  --rounds N          measured rounds per server, alternating A, B, A, B (default 3; 1 with --smoke)
  --warmup S          warm-up seconds per server (default 2; none with --smoke)
  --db sqlite|postgres  storage of the Strongroom under test (default sqlite)
  --postgres-url URL  where to create the fresh database (default postgres://postgres@127.0.0.1:5432/postgres)
  --no-install        skip peers that are not installed instead of installing their Debian packages
  --smoke             about one second per scenario with tiny data and no installs
  --json FILE         also write the results as JSON
  --cpu-prof DIR      write a V8 CPU profile of each Strongroom server into DIR (open in Chrome DevTools)
  --workers N         worker processes of every Strongroom server started (its --workers; default 1); the
                      server CPU column sums the whole process tree, primary and workers
  --pki-no-store      the PKI scenarios' roles get no_store=true (no certificate stored, as cfssl serve here)
  --server-cpus LIST  run every server and peer on these cores only (taskset -c LIST, e.g. 0 or 0-1), so that
                      the load generator keeps the others: start the harness itself with taskset on the rest,
                      e.g. taskset -c 1 node dist/bench/bench.js pki-sign-p256 --server-cpus 0
  --load-generator autocannon|wrk  what loads the servers (default autocannon); wrk (C, one thread) costs the
                      machine far less per request, so the latencies and their tail are the servers'; scenarios
                      whose requests wrk cannot express (a body made per request) stay on autocannon
  --server-arg ARG    pass ARG to every Strongroom server started (repeatable),
                      e.g. --server-arg=--batch-background-threads=false
  --write-docs        rewrite docs/benchmarks.md from the results
Scenarios: ${SCENARIOS.map((s) => s.name).join(', ')}
`;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function parse(argv: string[]): { names: string[]; opts: RunOptions; json?: string; writeDocs: boolean } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      connections: { type: 'string' },
      duration: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      db: { type: 'string' },
      'postgres-url': { type: 'string' },
      'no-install': { type: 'boolean' },
      smoke: { type: 'boolean' },
      json: { type: 'string' },
      'cpu-prof': { type: 'string' },
      'server-arg': { type: 'string', multiple: true },
      workers: { type: 'string' },
      'server-cpus': { type: 'string' },
      'load-generator': { type: 'string' },
      'write-docs': { type: 'boolean' },
      'pki-no-store': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  if (values['pki-no-store']) {
    pkiRoleSettings.noStore = true;
    process.stdout.write('the bench roles have no_store=true: issued certificates are not stored\n');
  }
  const num = (v: string | undefined, name: string, def: number, min: number): number => {
    if (v === undefined) return def;
    const x = Number(v);
    if (!Number.isFinite(x) || x < min) throw new Error(`--${name} must be a number >= ${min}`);
    return x;
  };
  const smoke = values.smoke === true;
  const db = values.db ?? 'sqlite';
  if (db !== 'sqlite' && db !== 'postgres') throw new Error('--db must be sqlite or postgres');
  const opts: RunOptions = {
    db,
    connections: values.connections === undefined ? null : Math.round(num(values.connections, 'connections', 64, 1)),
    seconds: num(values.duration, 'duration', smoke ? 1 : 5, 0.2),
    rounds: Math.round(num(values.rounds, 'rounds', smoke ? 1 : 3, 1)),
    warmupSeconds: num(values.warmup, 'warmup', smoke ? 0 : 2, 0),
    smoke,
    install: !smoke && values['no-install'] !== true,
    postgresUrl: values['postgres-url'] ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    cpuProfileDir: values['cpu-prof'] ?? null,
    serverCpus: values['server-cpus'] ?? null,
    loadGenerator: loadGeneratorOf(values['load-generator']),
    serverArgs: [
      ...(values.workers === undefined ? [] : ['--workers', String(Math.round(num(values.workers, 'workers', 1, 1)))]),
      ...(values['server-arg'] ?? []),
    ],
  };
  const names: string[] = [];
  for (const p of positionals.flatMap((x) => x.split(','))) {
    if (p === 'all') names.push(...SCENARIOS.map((s) => s.name));
    else if (p === 'list') {
      for (const s of SCENARIOS) process.stdout.write(`${s.name.padEnd(26)} ${s.title}\n`);
      process.exit(0);
    } else if (SCENARIOS.some((s) => s.name === p)) names.push(p);
    else throw new Error(`unknown scenario "${p}" (try: npm run bench -- list)`);
  }
  return { names: [...new Set(names)], opts, json: values.json, writeDocs: values['write-docs'] === true };
}

function loadGeneratorOf(v: string | undefined): 'autocannon' | 'wrk' {
  if (v === undefined || v === 'autocannon') return 'autocannon';
  if (v !== 'wrk') throw new Error(`--load-generator: expected autocannon or wrk, got "${v}"`);
  if (!wrkAvailable()) throw new Error('--load-generator wrk: wrk is not installed (apt-get install wrk)');
  return 'wrk';
}

async function main(): Promise<number> {
  const { names, opts, json, writeDocs } = parse(process.argv.slice(2));
  useLoadGenerator(opts.loadGenerator);
  const tmpDir = mkdtempSync(join(tmpdir(), 'strongroom-bench-'));
  const serverGroup = new ProcessGroup(opts.serverCpus);
  // One server per scenario: fresh storage, no job backlog from an earlier scenario, and a peak RSS of its own.
  let server: Promise<Strongroom> | null = null;
  let peerGroup = new ProcessGroup(opts.serverCpus);
  const stopServer = async () => {
    const s = server;
    server = null;
    if (s)
      await s.then(
        (x) => x.stop(),
        () => undefined,
      );
  };
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`\n${sig}: stopping everything the harness started\n`);
    void Promise.all([peerGroup.stopAll(), stopServer()]).finally(() => {
      serverGroup.killAllNow();
      rmSync(tmpDir, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', () => {
    peerGroup.killAllNow();
    serverGroup.killAllNow();
  });

  const started = performance.now();
  const loadAtStart = loadavg();
  const results: { r: ScenarioResult; s: Scenario }[] = [];
  try {
    for (const name of names) {
      if (interrupted) break;
      const s = SCENARIOS.find((x) => x.name === name) as Scenario;
      peerGroup = new ProcessGroup(opts.serverCpus);
      // Under --smoke a few connections are enough to prove the scenario works, and they finish within a second.
      const connections = opts.connections ?? (opts.smoke ? Math.min(8, s.defaultConnections) : s.defaultConnections);
      const ctx: RunContext = {
        opts,
        group: peerGroup,
        tmpDir,
        connections,
        size: (full, tiny) => (opts.smoke ? tiny : full),
        log: (m) => process.stderr.write(`  [${s.name}] ${m}\n`),
        strongroom: (o) => {
          if (!server) {
            const extraArgs = [...(o?.jobWorker === false ? ['--job-worker', 'false'] : []), ...opts.serverArgs];
            server = startStrongroom(serverGroup, {
              db: opts.db,
              postgresUrl: opts.postgresUrl,
              extraArgs,
              cpuProfileDir: opts.cpuProfileDir,
            });
          }
          return server;
        },
      };
      process.stderr.write(`\n-- ${s.name}\n`);
      const t0 = performance.now();
      const base = {
        name: s.name,
        rows: [],
        ratios: [],
        facts: [],
        target: s.target,
        connections,
        seconds: opts.seconds,
        rounds: opts.rounds,
      };
      let r: ScenarioResult;
      const limitSec = opts.smoke ? 90 : 900;
      let timer: NodeJS.Timeout | undefined;
      try {
        const outcome = await Promise.race([
          s.run(ctx),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`scenario took longer than ${limitSec} s`)), limitSec * 1000);
          }),
        ]);
        r = {
          ...base,
          status: 'ok',
          rows: outcome.rows,
          ratios: outcome.ratios ?? [],
          facts: outcome.facts ?? [],
          verdict: outcome.verdict ? (outcome.verdict.met ? 'met' : 'missed') : 'no target',
          verdictDetail: outcome.verdict?.detail,
          elapsedSec: (performance.now() - t0) / 1000,
        };
      } catch (err) {
        const skipped = err instanceof Skip;
        let message = err instanceof Error ? err.message : String(err);
        const pending = server as Promise<Strongroom> | null;
        const srv = pending ? await pending.catch(() => null) : null;
        if (!skipped && srv && !srv.alive())
          message += `\nthe server exited; its last output:\n${srv.output().slice(-2000)}`;
        r = {
          ...base,
          status: skipped ? 'skipped' : 'failed',
          message,
          verdict: 'no target',
          elapsedSec: (performance.now() - t0) / 1000,
        };
      } finally {
        clearTimeout(timer);
        await peerGroup.stopAll();
        await stopServer();
      }
      results.push({ r, s });
      printResult(r, s);
    }
  } finally {
    await peerGroup.stopAll();
    await stopServer();
    await serverGroup.stopAll();
    rmSync(tmpDir, { recursive: true, force: true });
  }
  const totalSec = (performance.now() - started) / 1000;
  process.stdout.write(
    `\n${summaryLines(results).join('\n')}\n\n${results.length} scenario(s) in ${totalSec.toFixed(1)} s\n`,
  );
  if (json)
    writeFileSync(
      json,
      `${JSON.stringify(
        results.map((x) => x.r),
        null,
        2,
      )}\n`,
    );
  if (writeDocs) {
    const shown = process.argv.slice(2).filter((a, i, all) => a !== '--json' && all[i - 1] !== '--json');
    const command = `npm run bench -- ${shown.join(' ')}`;
    const page = join(ROOT, 'docs', 'benchmarks.md');
    const md = docsMarkdown({
      results,
      kept: existsSync(page) ? keptSections(readFileSync(page, 'utf8')) : '',
      command,
      db: opts.db,
      date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
      totalSec,
      loadAtStart,
    });
    writeFileSync(page, md);
    process.stdout.write('wrote docs/benchmarks.md\n');
  }
  return results.some((x) => x.r.status === 'failed') ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  },
);
