import { cpus, loadavg, release, totalmem } from 'node:os';
import type { Scenario, ScenarioResult } from './types.js';

function n(v: number, digits = 1): string {
  if (!Number.isFinite(v)) return '-';
  return v >= 1000 ? Math.round(v).toLocaleString('en-US') : v.toFixed(digits);
}

/** Markdown table rows for one result (the console prints the same table). */
export function resultTable(r: ScenarioResult, s: Scenario): string[] {
  const out: string[] = [];
  if (r.status !== 'ok') {
    const message = (r.message ?? '').replace(/^skipped: /, '');
    out.push(`**${r.status === 'skipped' ? 'Skipped' : 'Failed'}:** ${message}`);
    return out;
  }
  if (r.rows.length > 0) {
    out.push(
      '| server | req/s | MB/s | p50 ms | p99 ms | mean ms | p99.9 ms | CPU µs/req | peak RSS MB | RSS growth MB ' +
        '| ratio |',
    );
    out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const row of r.rows) {
      const m = row.median;
      const ratio = row.kind === 'strongroom' ? '' : r.ratios.find((x) => x.against === row.label);
      const ratioText =
        ratio && Number.isFinite(ratio.value)
          ? `${ratio.value.toFixed(2)}x (${ratio.metric})`
          : row.kind === 'strongroom'
            ? '1.00x'
            : '-';
      out.push(
        `| ${row.label} | ${n(m.reqPerSec)} | ${n(m.mbPerSec, 2)} | ${n(m.p50Ms, 2)} | ${n(m.p99Ms, 2)} | ` +
          `${n(m.meanMs ?? NaN, 2)} | ${n(m.p999Ms ?? NaN, 2)} | ` +
          `${row.cpuMicrosPerRequest == null ? '-' : n(row.cpuMicrosPerRequest, 0)} | ` +
          `${row.peakRssMb === null ? '-' : n(row.peakRssMb, 0)} | ` +
          `${row.rssGrowthMb === null ? '-' : n(row.rssGrowthMb, 0)} | ${ratioText} |`,
      );
    }
    out.push('');
  }
  for (const f of r.facts) out.push(`- ${f.label}: ${f.value}`);
  out.push(`- target: ${s.target}`);
  if (r.verdict !== 'no target')
    out.push(`- verdict: **${r.verdict}**${r.verdictDetail ? ` (${r.verdictDetail})` : ''}`);
  if (r.rows.length > 0) {
    const failures = r.rows.reduce((a, row) => a + row.median.failures, 0);
    out.push(
      `- ${r.connections} connections, ${r.rounds} round(s) of ${r.seconds} s each; medians over ` +
        `rounds${failures > 0 ? `; ${failures} failed requests` : ''}`,
    );
  }
  return out;
}

export function printResult(r: ScenarioResult, s: Scenario): void {
  const lines = [
    ``,
    `== ${r.name}: ${s.title}`,
    `   peer: ${s.peer}`,
    ...resultTable(r, s).map((l) => `   ${l}`),
    `   (${r.elapsedSec.toFixed(1)} s)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

export function summaryLines(results: { r: ScenarioResult; s: Scenario }[]): string[] {
  const out = ['| scenario | Strongroom | peer | ratio | target | verdict |', '| --- | --- | --- | --- | --- | --- |'];
  for (const { r, s } of results) {
    const ours = r.rows.find((x) => x.kind === 'strongroom');
    const peer = r.rows.find((x) => x.kind === 'peer');
    const metric = r.ratios[0]?.metric ?? 'req/s';
    const val = (row: typeof ours) =>
      row
        ? metric === 'MB/s'
          ? `${n(row.median.mbPerSec, 1)} MB/s`
          : `${n(row.median.reqPerSec)} req/s, p99 ${n(row.median.p99Ms, 1)} ms`
        : '';
    const ratio = r.ratios
      .filter((x) => Number.isFinite(x.value))
      .map((x) => `${x.value.toFixed(2)}x ${x.against}`)
      .join('; ');
    const status = r.status === 'ok' ? (r.verdict === 'no target' ? '-' : r.verdict) : r.status;
    const oursText =
      r.status !== 'ok' ? '-' : ours ? val(ours) : (r.facts.find((f) => /time|rebuild/.test(f.label))?.value ?? '');
    out.push(
      `| [${s.name}](#${s.name}) | ${oursText} | ${peer ? `${peer.label}: ${val(peer)}` : '-'} | ${ratio || '-'} ` +
        `| ${s.target} | ${status} |`,
    );
  }
  return out;
}

export function machineLines(db: string, loadAtStart: number[]): string[] {
  const cpu = cpus();
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  return [
    `- Load average (1, 5, 15 min) at the start: ${load(loadAtStart)}; at the end: ${load(loadavg())}`,
    `- CPU: ${cpu[0]?.model ?? 'unknown'}, ${cpu.length} cores`,
    `- Memory: ${(totalmem() / 1024 ** 3).toFixed(1)} GB`,
    `- Kernel: Linux ${release()}; Node.js ${process.version}`,
    `- Database: ${db === 'postgres' ? 'PostgreSQL (a fresh database' : 'SQLite (a fresh data directory'} per server)`,
    '- Load generator: autocannon in the harness process, on the same machine as the servers, all over 127.0.0.1',
  ];
}

/** What `--write-docs` keeps from the page it replaces: the text between these two lines. */
export const KEPT_START = '<!-- measured by hand: --write-docs keeps everything from here to the end marker -->';
export const KEPT_END = '<!-- end of what --write-docs keeps -->';

/** The kept part of an existing page (see KEPT_START), or '' when it has none. */
export function keptSections(page: string): string {
  const a = page.indexOf(KEPT_START);
  const b = page.indexOf(KEPT_END);
  return a >= 0 && b > a ? page.slice(a + KEPT_START.length, b).trim() : '';
}

export function docsMarkdown(opts: {
  results: { r: ScenarioResult; s: Scenario }[];
  /** Hand-measured sections carried over from the page being replaced (keptSections). */
  kept: string;
  command: string;
  db: string;
  date: string;
  totalSec: number;
  loadAtStart: number[];
}): string {
  const lines: string[] = [
    '# Benchmarks',
    '',
    'Strongroom measured side by side with the software it replaces or competes with, on one machine. ',
    `This page is generated by \`${opts.command}\`; edit \`bench/\` rather than this file.`,
    '',
    '## Machine and method',
    '',
    ...machineLines(opts.db, opts.loadAtStart),
    `- Run: ${opts.date}, ${(opts.totalSec / 60).toFixed(1)} minutes in all`,
    '',
    ...busyWarning(opts.loadAtStart),
    'Each scenario starts Strongroom as a separate process (`node dist/src/cli.js server --dev`) with fresh storage, ' +
      'starts its peer, warms both up, then measures them in turn (A, B, A, B...) for several rounds ' +
      'so that drift of ' +
      'the machine hits both alike. Numbers are medians over the rounds; the ratio is the median of the per-round ' +
      "ratios. Peak RSS is sampled from /proc every 50 ms for the server's whole process tree while it is measured, " +
      'and its CPU time (all threads, user and system) is read before and after each round: CPU µs/req is that time ' +
      'divided by the requests answered, which other load on the machine disturbs far less than req/s. ' +
      'Client and servers share the two cores, so absolute numbers are lower than on a dedicated load generator; ' +
      'the ratios are the point. Even they move between runs on a shared virtual machine: two identical builds ' +
      'measured alternately differed by up to 0.06 in pki-issue-p256, so compare builds over several runs, not one ' +
      '(decision 0018).',
    '',
    'A scenario whose feature does not exist yet in this build says so and is skipped; it runs unchanged once the ' +
      'feature lands. `npm test` runs every scenario for about one second with tiny data (test/bench-smoke.test.ts) ' +
      'so the harness keeps working.',
    '',
    '## Summary',
    '',
    ...summaryLines(opts.results),
    '',
    tally(opts.results.map((x) => x.r)),
    '',
  ];
  for (const { r, s } of opts.results) {
    lines.push(
      `## ${s.name}`,
      '',
      `${s.title}.`,
      '',
      `Peer: ${s.peer}.`,
      '',
      ...resultTable(r, s),
      '',
      `Where the time goes: ${s.notes}`,
      '',
    );
  }
  // Sections measured by hand (A/B pairs with and without a setting, in-process timings) are kept from the page
  // being replaced, between the two markers.
  lines.push(KEPT_START, '', opts.kept.trim(), '', KEPT_END, '');
  lines.push(
    '## Running it',
    '',
    '```',
    'npm run bench -- <scenario>|all [--connections N] [--duration S] [--rounds N] [--db sqlite|postgres]',
    '                 [--postgres-url URL] [--no-install] [--smoke] [--json FILE] [--write-docs]',
    '                 [--workers N] [--server-cpus LIST] [--server-arg ARG] [--pki-no-store]',
    'npm run bench -- list',
    '```',
    '',
    'Missing peers are installed from Debian packages (`nginx-light`, `golang-cfssl`; `openssl` is usually present) ' +
      'unless `--no-install` is given, in which case those peers are skipped with a message. With `--db postgres` ' +
      'each server gets a new database created next to the one in `--postgres-url` ' +
      '(default `postgres://postgres@127.0.0.1:5432/postgres`), dropped afterwards.',
    '',
    '`--workers N` starts every Strongroom server with N worker processes (the CPU column sums the primary and the ' +
      "workers; without it, one process, whatever the server's own default). `--server-cpus LIST` runs every " +
      'server and peer under `taskset -c LIST`; start the harness, which ' +
      'generates the load, on the other cores, for example ' +
      '`taskset -c 1 npm run bench -- pki-sign-p256 --server-cpus 0` ' +
      'for one server core, or `--server-cpus 0-1 --workers 2` for two. A server pinned to K cores accepts at most ' +
      "`--workers K`. `--pki-no-store` gives the PKI scenarios' roles `no_store=true`.",
    '',
  );
  return lines.join('\n');
}

function tally(results: ScenarioResult[]): string {
  const count = (f: (r: ScenarioResult) => boolean) => results.filter(f).length;
  const ok = count((r) => r.status === 'ok');
  const skipped = results.filter((r) => r.status === 'skipped');
  const missing = skipped.filter((r) => (r.message ?? '').includes('feature not available yet')).map((r) => r.name);
  const parts = [
    `${ok} of ${results.length} scenarios ran`,
    `${count((r) => r.verdict === 'met')} targets met, ${count((r) => r.verdict === 'missed')} missed`,
  ];
  if (missing.length > 0)
    parts.push(`skipped because the feature is not available yet in this build: ${missing.join(', ')}`);
  const otherSkips = skipped.length - missing.length;
  if (otherSkips > 0) parts.push(`${otherSkips} skipped for another reason (see below)`);
  const failed = count((r) => r.status === 'failed');
  if (failed > 0) parts.push(`${failed} failed (see below)`);
  return `${parts.join('; ')}.`;
}

/** A machine busy with other work understates every absolute number; the page should say so. */
function busyWarning(loadAtStart: number[]): string[] {
  const cores = cpus().length;
  const load = Math.max(loadAtStart[0] ?? 0, loadavg()[0] ?? 0);
  if (load <= cores) return [];
  return [
    `**This run shared the machine with other work** (load average ${load.toFixed(1)} on ${cores} ` +
      `cores), so absolute ` +
      'numbers are well below what an idle machine gives and vary from round to round; the ratios, measured in ' +
      'alternating rounds, hold up better. Rerun on a quiet machine before drawing conclusions from absolute numbers.',
    '',
  ];
}
