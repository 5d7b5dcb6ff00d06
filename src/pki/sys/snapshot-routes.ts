import type { Clock } from '../../shared/clock.js';
import type { SystemRoute } from './system-route.js';

export interface SnapshotRouteDeps {
  clock: Clock;
  /** Takes the snapshot (before it resolves) and streams the backup archive. */
  takeSnapshot(): Promise<{ bytes: AsyncIterable<Buffer> }>;
}

/**
 * `GET /v1/sys/storage/raft/snapshot`, after Vault's
 * (https://developer.hashicorp.com/vault/api-docs/system/storage/raft#take-a-snapshot-of-the-raft-cluster):
 * root or `sudo` only, the snapshot streamed as the answer. The body is the same archive as
 * `strongroom backup` writes (not Vault's format), so `strongroom restore` restores it; it
 * never holds the master key.
 */
export function snapshotRoutes(deps: SnapshotRouteDeps): SystemRoute[] {
  return [
    {
      pattern: 'sys/storage/raft/snapshot',
      operations: ['read'],
      sudo: true,
      mountType: 'system',
      async handler() {
        const backup = await deps.takeSnapshot();
        const stamp = deps.clock
          .now()
          .toISOString()
          .replace(/[-:]|\.\d+/g, '');
        return {
          kind: 'stream',
          contentType: 'application/octet-stream',
          headers: { 'content-disposition': `attachment; filename="strongroom-${stamp}.tar"` },
          body: backup.bytes,
        };
      },
    },
  ];
}
