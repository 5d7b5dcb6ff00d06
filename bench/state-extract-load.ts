import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { api, dig } from './lib/api.js';
import { runAutocannon } from './lib/load.js';
import { ProcessGroup } from './lib/processes.js';
import { startStrongroom } from './lib/strongroom.js';
import { createStateVersion, lockedWorkspace, onServer } from './lib/tfe.js';

/**
 * API latency while a large state is extracted, against idle:
 *
 *   node dist/bench/state-extract.js generate /tmp/200m.tfstate 200000 200000000
 *   node dist/bench/state-extract-load.js /tmp/200m.tfstate [seconds] [connections]
 *
 * Starts the built server as its own process (SQLite), measures GET /api/v2/workspaces/:id
 * for `seconds` when idle, then uploads the state through its upload URL and measures the
 * same request again while the extraction job runs.
 */

async function main(argv: string[]): Promise<void> {
  const [file, secondsArg, connArg] = argv;
  if (!file) throw new Error('usage: state-extract-load.js <state file> [seconds] [connections]');
  const seconds = Number(secondsArg ?? 3);
  const connections = Number(connArg ?? 4);
  const group = new ProcessGroup();
  const sr = await startStrongroom(group, { db: 'sqlite', postgresUrl: '' });
  try {
    const ws = await lockedWorkspace(sr, 'load');
    const headers = { authorization: `Bearer ${sr.token}`, accept: 'application/vnd.api+json' };
    const target = { url: `${sr.url}/api/v2/workspaces/${ws.id}`, headers, connections, seconds };
    await runAutocannon({ ...target, seconds: 1 }); // warm-up
    const idle = await runAutocannon(target);

    const md5 = createHash('md5');
    for await (const chunk of createReadStream(file)) md5.update(chunk as Buffer);
    const head = JSON.parse(
      readFileSync(file)
        .subarray(0, 4096)
        .toString('utf8')
        .replace(/,\s*"(outputs|resources)"[\s\S]*$/, '}'),
    ) as { serial: number; lineage: string };
    const v = await createStateVersion(sr, ws.id, {
      serial: head.serial,
      md5: md5.digest('hex'),
      lineage: head.lineage,
    });
    if (!v.uploadUrl) throw new Error('no upload URL');
    const t0 = performance.now();
    const put = await fetch(onServer(sr, v.uploadUrl), {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(statSync(file).size) },
      body: Readable.toWeb(createReadStream(file, { highWaterMark: 1024 * 1024 })) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    if (put.status >= 300) throw new Error(`upload answered ${put.status}: ${await put.text()}`);
    const uploadSeconds = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    const busy = await runAutocannon(target);
    const measuredUntil = performance.now();
    let processedAt = 0;
    for (;;) {
      const r = await api(sr, 'tfe', 'GET', `/api/v2/state-versions/${v.id}`);
      if (dig(r.json, 'data', 'attributes', 'resources-processed') === true) {
        processedAt = performance.now();
        break;
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    const extractionSeconds = (processedAt - t1) / 1000;
    console.log(
      JSON.stringify({
        bytes: statSync(file).size,
        uploadSeconds: +uploadSeconds.toFixed(2),
        extractionSecondsAfterUpload: +extractionSeconds.toFixed(2),
        extractionCoveredWindow: processedAt >= measuredUntil,
        idle: { p50Ms: idle.p50Ms, p99Ms: idle.p99Ms, reqPerSec: Math.round(idle.reqPerSec) },
        duringExtraction: { p50Ms: busy.p50Ms, p99Ms: busy.p99Ms, reqPerSec: Math.round(busy.reqPerSec) },
        p99Ratio: +(busy.p99Ms / idle.p99Ms).toFixed(2),
      }),
    );
  } finally {
    await sr.stop();
    await group.stopAll();
  }
}

await main(process.argv.slice(2));
