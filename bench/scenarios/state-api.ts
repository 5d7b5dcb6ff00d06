import type { AutocannonRequest } from 'autocannon';
import { api, authHeaders, dig } from '../lib/api.js';
import { compareRounds } from '../lib/compare.js';
import { httpRequest, runAutocannon } from '../lib/load.js';
import { BENCH_LINEAGE, StateTemplate } from '../lib/state-data.js';
import { seedVersionsInDatabase } from '../lib/fast-seed.js';
import { createBody, createStateVersion, lockedWorkspace } from '../lib/tfe.js';
import type { BenchWorkspace } from '../lib/tfe.js';
import type { Scenario } from '../lib/types.js';

export const stateCreateInline: Scenario = {
  name: 'state-create-inline-10k',
  title: 'POST /api/v2/workspaces/:id/state-versions with a 10 KB state inline (finalized and durable on return)',
  target: '>= 1,500 req/s',
  peer: 'none',
  defaultConnections: 64,
  notes:
    'Every request carries a new serial in a workspace of its own connection (the API refuses serials that go ' +
    'backwards), so each one is a real new version: base64 decoding, the MD5 check, parsing the state header, ' +
    'storing the state, committing the version row and enqueueing the extraction job. States up to ' +
    "state_inline_max_size (64 KB) are stored in the database in the version's own transaction, and concurrent " +
    'creates share one commit (one fsync on SQLite), so durability on return costs one fsync per ' +
    'batch, not per request.',
  async run(ctx) {
    const sr = await ctx.strongroom({ jobWorker: false });
    const pool: BenchWorkspace[] = [];
    for (let i = 0; i < ctx.connections + 8; i++) pool.push(await lockedWorkspace(sr, 'create'));
    const template = new StateTemplate(10_240);
    const serials = new Map<string, number>();
    const first = pool[0] as BenchWorkspace;
    const s1 = template.withSerial(1);
    await createStateVersion(sr, first.id, { serial: 1, md5: s1.md5, lineage: BENCH_LINEAGE, state: s1.bytes });
    serials.set(first.id, 1);
    const headers = authHeaders(sr, 'tfe');
    let free: BenchWorkspace[] = [];
    // A workspace is held by one connection from request build to response, so its serials stay in order.
    const request: AutocannonRequest = {
      method: 'POST',
      headers,
      setupRequest: (req, context) => {
        const ws = free.pop() ?? first;
        context.ws = ws;
        const serial = (serials.get(ws.id) ?? 0) + 1;
        serials.set(ws.id, serial);
        const s = template.withSerial(serial);
        const body = JSON.stringify(createBody({ serial, md5: s.md5, lineage: BENCH_LINEAGE, state: s.bytes }));
        return { ...req, path: `/api/v2/workspaces/${ws.id}/state-versions`, body };
      },
      onResponse: (_status, _body, context) => {
        if (context.ws) free.push(context.ws as BenchWorkspace);
      },
    };
    const rows = await compareRounds(ctx, [
      {
        label: 'Strongroom',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) => {
          free = [...pool];
          return runAutocannon({ url: sr.url, connections: ctx.connections, seconds, requests: [request] });
        },
      },
    ]);
    const rps = rows[0]?.median.reqPerSec ?? 0;
    return {
      rows,
      facts: [{ label: 'state size', value: `${s1.bytes.length} bytes` }],
      verdict: { met: rps >= 1500, detail: `${Math.round(rps)} req/s (target >= 1,500)` },
    };
  },
};

export const stateList: Scenario = {
  name: 'state-list-100k',
  title: 'GET /api/v2/state-versions, pages of 20 at random page numbers, in a workspace with 100,000 versions',
  target: 'p99 < 20 ms',
  peer: 'none',
  defaultConnections: 8,
  notes:
    'The workspace is seeded first: a slice through the API (small states, `force` so that parallel seeding is not ' +
    'refused for serial order), the rest as SQL copies of the newest version with the history counters kept in step, ' +
    'because 100,000 durable creates would take longer than the whole benchmark may. Pages are picked at random ' +
    'over the whole range, so deep pages count as much as the first: ' +
    'that exercises the count and the offset of the listing query, which is where the time goes as the list grows.',
  async run(ctx) {
    const sr = await ctx.strongroom({ jobWorker: false });
    const ws = await lockedWorkspace(sr, 'list');
    const want = ctx.size(100_000, 60);
    const template = new StateTemplate(1_000);
    const s1 = template.withSerial(1);
    await createStateVersion(sr, ws.id, { serial: 1, md5: s1.md5, lineage: BENCH_LINEAGE, state: s1.bytes });
    const listPath = (page: number) =>
      `/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=${encodeURIComponent(ws.name)}` +
      `&filter%5Borganization%5D%5Bname%5D=${encodeURIComponent(ws.org)}&page%5Bnumber%5D=${page}&page%5Bsize%5D=20`;
    await api(sr, 'tfe', 'GET', listPath(1));

    // A slice through the API (the real write path), the rest copied in SQL when the layout is known.
    const seedStart = performance.now();
    const viaApi = await seedVersions(
      sr.url,
      authHeaders(sr, 'tfe'),
      ws.id,
      template,
      Math.min(want - 1, ctx.size(1_000, 40)),
      ctx.size(60, 20),
    );
    const apiSec = (performance.now() - seedStart) / 1000;
    const rest = want - 1 - viaApi;
    const inDb = rest > 0 ? await seedVersionsInDatabase(sr, ws.id, rest) : 0;
    const viaLoop =
      inDb === null ? await seedVersions(sr.url, authHeaders(sr, 'tfe'), ws.id, template, rest, ctx.size(120, 10)) : 0;
    const seedSec = (performance.now() - seedStart) / 1000;
    const seeded = viaApi + (inDb ?? 0) + viaLoop;
    const total = seeded + 1;
    ctx.log(
      `seeded ${total} versions in ${seedSec.toFixed(1)} s (${viaApi + viaLoop + 1} through the API, ` +
        `${inDb ?? 0} in SQL)`,
    );
    const check = await api(sr, 'tfe', 'GET', listPath(1));
    const count = dig(check.json, 'meta', 'pagination', 'total-count');
    const pages = Math.max(1, Math.ceil(total / 20));
    const headers = authHeaders(sr, 'tfe');
    const rows = await compareRounds(ctx, [
      {
        label: 'Strongroom',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) =>
          runAutocannon({
            url: sr.url,
            connections: ctx.connections,
            seconds,
            requests: [
              {
                method: 'GET',
                headers,
                setupRequest: (req) => ({ ...req, path: listPath(1 + Math.floor(Math.random() * pages)) }),
              },
            ],
          }),
      },
    ]);
    const p99 = rows[0]?.median.p99Ms ?? Infinity;
    const complete = total >= want;
    return {
      rows,
      facts: [
        {
          label: 'versions in the workspace',
          value: `${total}${complete ? '' : ` (seeding stopped at its time limit; wanted ${want})`}`,
        },
        { label: 'total-count reported', value: String(count) },
        {
          label: 'seeding',
          value:
            `${viaApi + viaLoop + 1} versions through the API ` +
            `(${Math.round((viaApi + 1) / Math.max(apiSec, 0.001))} creates/s at 8 connections), ` +
            `${inDb ?? 0} copied in SQL; ${seedSec.toFixed(1)} s`,
        },
      ],
      verdict: {
        met: p99 < 20 && complete,
        detail: `p99 ${p99.toFixed(2)} ms at ${ctx.connections} connections (target < 20 ms)`,
      },
    };
  },
};

/** Creates `count` more versions in one workspace with 8 parallel requests; stops at `maxSeconds`. */
async function seedVersions(
  base: string,
  headers: Record<string, string>,
  wsId: string,
  template: StateTemplate,
  count: number,
  maxSeconds: number,
): Promise<number> {
  let nextSerial = 2;
  let done = 0;
  let failures = 0;
  const deadline = performance.now() + maxSeconds * 1000;
  const worker = async () => {
    while (done < count && performance.now() < deadline && failures < 1000) {
      const serial = nextSerial++;
      const s = template.withSerial(serial);
      const body = Buffer.from(
        JSON.stringify(createBody({ serial, md5: s.md5, lineage: BENCH_LINEAGE, state: s.bytes, force: true })),
      );
      const res = await httpRequest(`${base}/api/v2/workspaces/${wsId}/state-versions`, {
        method: 'POST',
        headers,
        body,
      });
      if (res.status === 201 || res.status === 200) done++;
      else if (++failures >= 1000)
        throw new Error(`seeding failed: HTTP ${res.status} ${res.body.toString('utf8').slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return done;
}
