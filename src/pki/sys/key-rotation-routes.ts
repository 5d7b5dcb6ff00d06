import { forbidden } from '../../shared/errors.js';
import type { SystemRequestContext, SystemRoute } from './system-route.js';

/** What the routes need of master key rotation (secrets/master-key-rotation.ts). */
export interface MasterKeyRotator {
  start(): Promise<RotationView>;
  status(): Promise<RotationView>;
}

export interface RotationView {
  keyId: string;
  keyIds: string[];
  keySource: 'file' | 'environment';
  rotation:
    | {
        state: 'running' | 'done';
        keyId: string;
        column: number;
        resealed: number;
        passes: number;
        startedAt: string;
        finishedAt?: string;
      }
    | undefined;
}

/**
 * Master key rotation over the API, shaped like Vault's `sys/rotate` (rotate the key that
 * protects stored data; https://developer.hashicorp.com/vault/api-docs/system/rotate) and
 * `sys/key-status`. Root tokens only: the answer names key ids, and a rotation rewrites
 * every sealed value.
 *
 * - `PUT|POST /v1/sys/rotate` starts a rotation (a new key with the key file; a re-seal
 *   under the configured key otherwise) and answers 204 as Vault does.
 * - `GET /v1/sys/key-status` shows the current key id, the keys that open values on
 *   this node, and the rotation's progress.
 */
export function keyRotationRoutes(rotator: MasterKeyRotator): SystemRoute[] {
  const rootOnly = (ctx: SystemRequestContext) => {
    if (!ctx.caller?.info.isRoot) throw forbidden('permission denied');
  };
  return [
    {
      pattern: 'sys/rotate',
      operations: ['update', 'create'],
      sudo: true,
      mountType: 'system',
      handler: async (ctx) => {
        rootOnly(ctx);
        await rotator.start();
        return { kind: 'status', status: 204 };
      },
    },
    {
      pattern: 'sys/key-status',
      operations: ['read'],
      sudo: true,
      mountType: 'system',
      handler: async (ctx) => {
        rootOnly(ctx);
        const s = await rotator.status();
        const r = s.rotation;
        return {
          kind: 'json',
          data: {
            key_id: s.keyId,
            key_ids: s.keyIds,
            key_source: s.keySource,
            rotation: r
              ? {
                  state: r.state,
                  key_id: r.keyId,
                  resealed: r.resealed,
                  passes: r.passes,
                  column: r.column,
                  started_at: r.startedAt,
                  finished_at: r.finishedAt ?? null,
                }
              : null,
          },
        };
      },
    },
  ];
}
