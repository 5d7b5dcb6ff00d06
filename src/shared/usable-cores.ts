import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * The cores this process may use: its CPU affinity (os.availableParallelism, which follows
 * `taskset`), lowered to a CPU quota of its cgroup when one is set (a container started with
 * `--cpus 2` on a 64-core host may run on every core, for two cores' worth of time). Node.js
 * reads only the affinity, so `--workers auto` would otherwise start a worker per host core.
 */
export function usableCores(read: (path: string) => string | undefined = readOrUndefined): number {
  const affinity = availableParallelism();
  const quota = cgroupCpuQuota(read);
  return quota === undefined ? affinity : Math.max(1, Math.min(affinity, Math.ceil(quota)));
}

/** The cgroup CPU quota in cores (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`), if any. */
export function cgroupCpuQuota(read: (path: string) => string | undefined): number | undefined {
  const own = read('/proc/self/cgroup') ?? '';
  const v2Path = /^0::(\/.*)$/m.exec(own)?.[1];
  const v1Path = /^\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(\/.*)$/m.exec(own)?.[1];
  const v2Files = [v2Path ? `/sys/fs/cgroup${v2Path}/cpu.max` : undefined, '/sys/fs/cgroup/cpu.max'];
  for (const f of v2Files) {
    const text = f ? read(f) : undefined;
    if (text === undefined) continue;
    const [max, period] = text.trim().split(/\s+/);
    if (max === 'max' || max === undefined) return undefined;
    return quotaOf(Number(max), Number(period ?? 100_000));
  }
  for (const dir of [v1Path ? `/sys/fs/cgroup/cpu${v1Path}` : undefined, '/sys/fs/cgroup/cpu']) {
    if (!dir) continue;
    const q = read(`${dir}/cpu.cfs_quota_us`);
    const p = read(`${dir}/cpu.cfs_period_us`);
    if (q === undefined || p === undefined) continue;
    return quotaOf(Number(q.trim()), Number(p.trim()));
  }
  return undefined;
}

function quotaOf(quota: number, period: number): number | undefined {
  return Number.isFinite(quota) && Number.isFinite(period) && quota > 0 && period > 0 ? quota / period : undefined;
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
