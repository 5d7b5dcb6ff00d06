import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { cgroupCpuQuota, usableCores } from './usable-cores.js';

const files =
  (map: Record<string, string>) =>
  (path: string): string | undefined =>
    map[path];

describe('usable cores', () => {
  it('reads a cgroup v2 quota from the process cgroup, else from the root', () => {
    const own = '0::/system.slice/strongroom.service\n';
    assert.equal(
      cgroupCpuQuota(
        files({
          '/proc/self/cgroup': own,
          '/sys/fs/cgroup/system.slice/strongroom.service/cpu.max': '150000 100000\n',
        }),
      ),
      1.5,
    );
    assert.equal(
      cgroupCpuQuota(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '200000 100000' })),
      2,
    );
    assert.equal(
      cgroupCpuQuota(files({ '/proc/self/cgroup': own, '/sys/fs/cgroup/cpu.max': 'max 100000' })),
      undefined,
    );
  });

  it('reads a cgroup v1 quota, and none when it is -1', () => {
    const own = '4:memory:/x\n3:cpu,cpuacct:/docker/abc\n';
    const dir = '/sys/fs/cgroup/cpu/docker/abc';
    const read = files({
      '/proc/self/cgroup': own,
      [`${dir}/cpu.cfs_quota_us`]: '300000\n',
      [`${dir}/cpu.cfs_period_us`]: '100000\n',
    });
    assert.equal(cgroupCpuQuota(read), 3);
    assert.equal(
      cgroupCpuQuota(
        files({
          '/proc/self/cgroup': '1:cpu:/\n',
          '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1',
          '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000',
        }),
      ),
      undefined,
    );
  });

  it('takes the affinity, lowered to the quota rounded up, and never below one', () => {
    const cores = availableParallelism();
    assert.equal(usableCores(files({})), cores);
    const quota = (q: string) => files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': q });
    assert.equal(usableCores(quota('50000 100000')), 1);
    assert.equal(usableCores(quota(`${cores * 100000 + 1} 100000`)), cores, 'never above the affinity');
    if (cores > 1) assert.equal(usableCores(quota('110000 100000')), 2);
  });
});
