import { api, authHeaders } from '../lib/api.js';
import { compareRounds, ratiosOf } from '../lib/compare.js';
import { runAutocannon } from '../lib/load.js';
import { startCeiling } from '../lib/peers.js';
import { BENCH_LINEAGE, StateTemplate } from '../lib/state-data.js';
import { createStateVersion, lockedWorkspace } from '../lib/tfe.js';
import type { Scenario } from '../lib/types.js';

export const httpCeiling: Scenario = {
  name: 'http-ceiling',
  title: 'Bare Fastify answering a fixed JSON body, next to Strongroom answering GET /healthz',
  target: 'none: it is the ceiling the other targets refer to',
  peer: 'bare Fastify 5, fixed JSON body, no logging',
  defaultConnections: 64,
  notes:
    'The ceiling is what one Node.js process running Fastify can answer on this machine with no work per request. ' +
    "Strongroom's /healthz does no I/O either, so the gap to the ceiling is the fixed cost of its request pipeline: " +
    'request ids, the access log at warn level, metrics and the hooks both products install.',
  async run(ctx) {
    const sr = await ctx.strongroom();
    const ceiling = await startCeiling(ctx);
    const rows = await compareRounds(ctx, [
      {
        label: 'Strongroom GET /healthz',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) => runAutocannon({ url: `${sr.url}/healthz`, connections: ctx.connections, seconds }),
      },
      {
        label: 'bare Fastify',
        kind: 'peer',
        pid: ceiling.pid,
        measure: (seconds) => runAutocannon({ url: `${ceiling.url}/`, connections: ctx.connections, seconds }),
      },
    ]);
    const peer = rows.find((r) => r.kind === 'peer');
    return {
      rows,
      ratios: ratiosOf(rows, 'req/s'),
      facts: peer
        ? [
            {
              label: 'HTTP ceiling',
              value: `${Math.round(peer.median.reqPerSec)} req/s at ${ctx.connections} connections`,
            },
          ]
        : [],
      verdict: null,
    };
  },
};

export const stateCurrent: Scenario = {
  name: 'state-current',
  title: 'GET /api/v2/workspaces/:id/current-state-version of a workspace with one 10 KB state',
  target: '>= 25% of the http-ceiling req/s at 64 connections',
  peer: 'bare Fastify (the http-ceiling peer)',
  defaultConnections: 64,
  notes:
    "Each request authenticates the bearer token (cached for 2 s), checks the caller's permission on the workspace " +
    "(cached for 2 s) and answers the current version's JSON:API document; on SQLite that document is kept in memory " +
    'until a write touches the workspace (docs/decisions/0014), so compared with the ceiling the time goes into the ' +
    'request pipeline, the token hash and the larger response.',
  async run(ctx) {
    const sr = await ctx.strongroom();
    const ws = await lockedWorkspace(sr, 'current');
    const state = new StateTemplate(ctx.size(10_240, 10_240)).withSerial(1);
    await createStateVersion(sr, ws.id, { serial: 1, md5: state.md5, lineage: BENCH_LINEAGE, state: state.bytes });
    const path = `/api/v2/workspaces/${ws.id}/current-state-version`;
    await api(sr, 'tfe', 'GET', path);
    const ceiling = await startCeiling(ctx);
    const headers = authHeaders(sr, 'tfe');
    const rows = await compareRounds(ctx, [
      {
        label: 'Strongroom',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) =>
          runAutocannon({ url: `${sr.url}${path}`, headers, connections: ctx.connections, seconds }),
      },
      {
        label: 'bare Fastify',
        kind: 'peer',
        pid: ceiling.pid,
        measure: (seconds) => runAutocannon({ url: `${ceiling.url}/`, connections: ctx.connections, seconds }),
      },
    ]);
    const ratios = ratiosOf(rows, 'req/s');
    const r = ratios[0]?.value ?? 0;
    return {
      rows,
      ratios,
      verdict: { met: r >= 0.25, detail: `${(r * 100).toFixed(1)}% of the ceiling (target >= 25%)` },
    };
  },
};
