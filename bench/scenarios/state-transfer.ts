import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, authHeaders, dig } from '../lib/api.js';
import { compareRounds, ratiosOf } from '../lib/compare.js';
import type { Contender } from '../lib/compare.js';
import { httpRequest, runAutocannon, runTasks } from '../lib/load.js';
import { startNginx, startUploadSink } from '../lib/peers.js';
import { BENCH_LINEAGE, StateVariants, stateFile } from '../lib/state-data.js';
import type { Strongroom } from '../lib/strongroom.js';
import { createStateVersion, lockedWorkspace, onServer, versionOf } from '../lib/tfe.js';
import { Skip } from '../lib/types.js';
import type { Scenario, ScenarioOutcome } from '../lib/types.js';

const MB = 1024 * 1024;

/** A pending version in a workspace of its own, ready for one upload of `content`. */
async function pendingUpload(sr: Strongroom, content: { serial: number; md5: string }): Promise<string> {
  const ws = await lockedWorkspace(sr, 'upload');
  const v = await createStateVersion(sr, ws.id, { serial: content.serial, md5: content.md5, lineage: BENCH_LINEAGE });
  if (!v.uploadUrl) throw new Error(`pending version ${v.id} has no hosted-state-upload-url (status ${v.status})`);
  return onServer(sr, v.uploadUrl);
}

async function put(url: string, body: Buffer): Promise<{ bytes: number }> {
  const res = await httpRequest(url, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body,
    timeoutMs: 600_000,
  });
  if (res.status < 200 || res.status >= 300)
    throw new Error(`PUT ${new URL(url).pathname} answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
  return { bytes: body.length };
}

function uploadScenario(
  name: string,
  bytes: number,
  smokeBytes: number,
  perRound: number,
  concurrency: number,
): Scenario {
  const big = bytes >= 100 * MB;
  return {
    name,
    title: `PUT of a ${Math.round(bytes / MB)} MB state to the hosted-state-upload-url of a pending version`,
    target: big
      ? ">= 70% of the bare Node.js server's MB/s, server RSS growth < 64 MB"
      : 'none (context for the 200 MB target)',
    peer: 'bare Node.js (write + MD5 + fsync); nginx WebDAV PUT',
    defaultConnections: concurrency,
    notes:
      'Each upload goes to a fresh pending version (created beforehand, not timed) with content of its own (the ' +
      'serial differs), so every PUT is a real first upload. Strongroom streams the body into the blob store (MD5, ' +
      'SHA-256, sealing and writes in batches on the threadpool with the native addon) while checking that the ' +
      'whole document is a valid state (uploads of 4 MB or more on ' +
      'a worker thread kept between uploads, smaller ones on the event loop), fsyncs the file and its directory, ' +
      'compares the MD5 with the one given at create and finalizes the version in a transaction. The bare ' +
      'Node.js peer does the ' +
      'streaming write, MD5 and fsync and nothing else; nginx writes a temporary file and renames it, without fsync. ' +
      'Background extraction is off on the measured server so the upload is measured alone.',
    async run(ctx): Promise<ScenarioOutcome> {
      const size = ctx.size(bytes, smokeBytes);
      const count = ctx.size(perRound, 2);
      const sr = await ctx.strongroom({ jobWorker: false });
      const file = await stateFile(size);
      const body = readFileSync(file.path);
      const variants = new StateVariants(file, body);
      let serial = 1;
      // Detect the feature before starting peers.
      await put(await pendingUpload(sr, file), body);
      const sink = await startUploadSink(ctx, join(ctx.tmpDir, `${name}-sink`));
      const contenders: Contender[] = [
        {
          label: 'Strongroom',
          kind: 'strongroom',
          pid: sr.pid,
          measure: async (seconds) => {
            const n = Math.max(1, Math.round(count * Math.min(1, seconds / Math.max(ctx.opts.seconds, 1))));
            const uploads: { url: string; bytes: Buffer }[] = [];
            for (let i = 0; i < n; i++) {
              const v = variants.variant(++serial);
              uploads.push({ url: await pendingUpload(sr, v), bytes: v.bytes });
            }
            return runTasks({
              concurrency: ctx.connections,
              count: n,
              seconds: big ? seconds * 20 + 60 : seconds * 2,
              task: (i) => {
                const u = uploads[i] as { url: string; bytes: Buffer };
                return put(u.url, u.bytes);
              },
            });
          },
        },
        {
          label: 'bare Node.js',
          kind: 'peer',
          pid: sink.pid,
          measure: (seconds) => {
            const n = Math.max(1, Math.round(count * Math.min(1, seconds / Math.max(ctx.opts.seconds, 1))));
            return runTasks({
              concurrency: ctx.connections,
              count: n,
              seconds: big ? seconds * 20 + 60 : seconds * 2,
              task: () => put(`${sink.url}/up`, body),
            });
          },
        },
      ];
      const skipped: string[] = [];
      try {
        const nginx = await startNginx(ctx, name);
        contenders.push({
          label: 'nginx WebDAV',
          kind: 'peer',
          pid: nginx.pid,
          measure: (seconds) => {
            const n = Math.max(1, Math.round(count * Math.min(1, seconds / Math.max(ctx.opts.seconds, 1))));
            return runTasks({
              concurrency: ctx.connections,
              count: n,
              seconds: big ? seconds * 20 + 60 : seconds * 2,
              task: (i) => put(`${nginx.url}/up/s${i % ctx.connections}`, body),
            });
          },
        });
      } catch (err) {
        if (!(err instanceof Skip)) throw err;
        skipped.push(err.message);
      }
      const rows = await compareRounds(ctx, contenders);
      const ratios = ratiosOf(rows, 'MB/s');
      const ours = rows.find((r) => r.kind === 'strongroom');
      const vsNode = ratios.find((r) => r.against === 'bare Node.js')?.value ?? 0;
      const growth = ours?.rssGrowthMb ?? Infinity;
      const facts = [
        { label: 'state size', value: `${(file.bytes / MB).toFixed(1)} MB, ${file.instances} resource instances` },
        {
          label: 'uploads per round',
          value: `${count} at ${ctx.connections} at a time${big ? '' : `, or ${2 * ctx.opts.seconds} s`}`,
        },
        ...skipped.map((s) => ({ label: 'peer skipped', value: s })),
      ];
      return {
        rows,
        ratios,
        facts,
        verdict: big
          ? {
              met: vsNode >= 0.7 && growth < 64,
              detail:
                `${(vsNode * 100).toFixed(0)}% of bare Node.js MB/s (target >= 70%), RSS growth ` +
                `${growth.toFixed(0)} MB (target < 64 MB)`,
            }
          : null,
      };
    },
  };
}

export const stateUpload1m = uploadScenario('state-upload-1m', 1 * MB, 64 * 1024, 60, 8);
export const stateUpload200m = uploadScenario('state-upload-200m', 200 * MB, 2 * MB, 1, 1);

export const stateDownload50m: Scenario = {
  name: 'state-download-50m',
  title: 'GET of a 50 MB state from its hosted-state-download-url',
  target: 'none set',
  peer: 'nginx serving the same bytes as a static file (sendfile)',
  defaultConnections: 4,
  notes:
    'Strongroom streams the blob from its store (a file with SQLite, rows with PostgreSQL) through Node.js; ' +
    'nginx hands the file to the kernel with sendfile, which is the most any server can do here.',
  async run(ctx) {
    const sr = await ctx.strongroom({ jobWorker: false });
    const file = await stateFile(ctx.size(50 * MB, 256 * 1024));
    const body = readFileSync(file.path);
    const ws = await lockedWorkspace(sr, 'download');
    const v = await createStateVersion(sr, ws.id, { serial: file.serial, md5: file.md5, lineage: BENCH_LINEAGE });
    if (!v.uploadUrl) throw new Error('pending version has no hosted-state-upload-url');
    await put(onServer(sr, v.uploadUrl), body);
    const shown = await api(sr, 'tfe', 'GET', `/api/v2/state-versions/${v.id}`);
    const download =
      versionOf(shown.json).downloadUrl ??
      (dig(shown.json, 'data', 'attributes', 'hosted-state-download-url') as string | null);
    if (!download) throw new Error('finalized version has no hosted-state-download-url');
    const url = onServer(sr, download);
    const headers = authHeaders(sr, 'tfe');
    const probe = await httpRequest(url, {
      method: 'GET',
      headers: { authorization: headers.authorization as string },
    });
    if (probe.status === 404)
      throw new Skip(`skipped: feature not available yet (GET ${new URL(url).pathname} answered 404)`);
    if (probe.status !== 200 || probe.body.length !== file.bytes) {
      throw new Error(`download answered ${probe.status} with ${probe.body.length} bytes, expected ${file.bytes}`);
    }
    const contenders: Contender[] = [
      {
        label: 'Strongroom',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) =>
          runAutocannon({
            url,
            headers: { authorization: headers.authorization as string },
            connections: ctx.connections,
            seconds,
          }),
      },
    ];
    const facts = [{ label: 'state size', value: `${(file.bytes / MB).toFixed(1)} MB` }];
    try {
      const nginx = await startNginx(ctx, 'download');
      copyFileSync(file.path, join(nginx.filesDir, 'state.tfstate'));
      contenders.push({
        label: 'nginx static',
        kind: 'peer',
        pid: nginx.pid,
        measure: (seconds) =>
          runAutocannon({ url: `${nginx.url}/files/state.tfstate`, connections: ctx.connections, seconds }),
      });
    } catch (err) {
      if (!(err instanceof Skip)) throw err;
      facts.push({ label: 'peer skipped', value: err.message });
    }
    const rows = await compareRounds(ctx, contenders);
    return { rows, ratios: ratiosOf(rows, 'MB/s'), facts, verdict: null };
  },
};
