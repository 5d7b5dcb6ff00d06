import { createHash, randomBytes } from 'node:crypto';
import { api, dig, digString } from './api.js';
import type { Strongroom } from './strongroom.js';

/** The benchmark organization, created once per server. */
export async function benchOrganization(sr: Strongroom): Promise<string> {
  let p = sr.fixtures.get('tfe-org') as Promise<string> | undefined;
  if (!p) {
    p = (async () => {
      const name = `bench-${randomBytes(4).toString('hex')}`;
      await api(sr, 'tfe', 'POST', '/api/v2/organizations', {
        body: { data: { type: 'organizations', attributes: { name, email: 'bench@example.com' } } },
      });
      return name;
    })();
    sr.fixtures.set('tfe-org', p);
    p.catch(() => sr.fixtures.delete('tfe-org'));
  }
  return p;
}

export interface BenchWorkspace {
  org: string;
  name: string;
  id: string;
}

/** A new workspace in the benchmark organization, locked by the admin token so it accepts state. */
export async function lockedWorkspace(sr: Strongroom, prefix: string): Promise<BenchWorkspace> {
  const org = await benchOrganization(sr);
  const name = `${prefix}-${randomBytes(5).toString('hex')}`;
  const ws = await api(sr, 'tfe', 'POST', `/api/v2/organizations/${org}/workspaces`, {
    body: { data: { type: 'workspaces', attributes: { name, 'execution-mode': 'local' } } },
  });
  const id = digString(ws.json, 'data', 'id');
  await api(sr, 'tfe', 'POST', `/api/v2/workspaces/${id}/actions/lock`, { body: { reason: 'benchmark' } });
  return { org, name, id };
}

export interface CreatedVersion {
  id: string;
  status: string;
  uploadUrl: string | null;
  downloadUrl: string | null;
}

export function md5Hex(bytes: Buffer | string): string {
  return createHash('md5').update(bytes).digest('hex');
}

/** The JSON:API body of a create; with `state` the version is finalized inline, without it pending. */
export function createBody(v: {
  serial: number;
  md5: string;
  lineage: string;
  state?: Buffer;
  force?: boolean;
}): unknown {
  return {
    data: {
      type: 'state-versions',
      attributes: {
        serial: v.serial,
        md5: v.md5,
        lineage: v.lineage,
        ...(v.state ? { state: v.state.toString('base64') } : {}),
        ...(v.force ? { force: true } : {}),
      },
    },
  };
}

export async function createStateVersion(
  sr: Strongroom,
  wsId: string,
  v: { serial: number; md5: string; lineage: string; state?: Buffer; force?: boolean },
): Promise<CreatedVersion> {
  const res = await api(sr, 'tfe', 'POST', `/api/v2/workspaces/${wsId}/state-versions`, { body: createBody(v) });
  return versionOf(res.json);
}

export function versionOf(doc: unknown): CreatedVersion {
  const attr = (k: string) => {
    const v = dig(doc, 'data', 'attributes', k);
    return typeof v === 'string' ? v : null;
  };
  return {
    id: digString(doc, 'data', 'id'),
    status: attr('status') ?? '',
    uploadUrl: attr('hosted-state-upload-url'),
    downloadUrl: attr('hosted-state-download-url'),
  };
}

/** Absolute URL for a URL the server returned (absolute, or a path on the server). */
export function onServer(sr: Strongroom, url: string): string {
  return new URL(url, sr.url).toString();
}
