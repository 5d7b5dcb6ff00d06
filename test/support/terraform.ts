import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseKind } from '../../src/db/database.js';
import { opensslTestCa } from '../e2e/pki-external-policy-helpers.js';
import { TfeHttp } from './tfe-http.js';
import { startTestServer } from './test-server.js';
import type { TestServer } from './test-server.js';

/**
 * The real Terraform CLI against a real server over TLS, for the end-to-end tests that
 * replace simulated call sequences. Each working directory is isolated: its own HOME, CLI
 * configuration (a `credentials` block for the server), data directory and no plugin cache;
 * the throwaway CA comes in through SSL_CERT_FILE; checkpoint calls are off and every
 * address but the loopback goes to a proxy that refuses, so nothing leaves the machine.
 * Only Terraform's built-in resources are used (`terraform_data`, `terraform_remote_state`):
 * no provider is downloaded.
 */

/** Why the real Terraform CLI cannot run here, or null when it can. */
export function terraformProblem(): string | null {
  const home = mkdtempSync(join(tmpdir(), 'strongroom-tf-probe-'));
  const r = spawnSync('terraform', ['version', '-json'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: home, CHECKPOINT_DISABLE: '1' },
  });
  if (r.error || r.status !== 0) return 'the Terraform CLI (terraform) is not on PATH';
  const version = String((JSON.parse(r.stdout) as { terraform_version?: unknown }).terraform_version);
  const [major = 0, minor = 0] = version.split('.').map(Number);
  // The cloud block with tags and upload URLs for state, as these tests use them.
  if (major < 1 || (major === 1 && minor < 6)) return `Terraform ${version} is older than 1.6`;
  return null;
}

/**
 * The `skip` option of a suite that needs the real CLI. Outside CI a missing binary skips
 * it; in CI (CI=true) or with REQUIRE_TERRAFORM=1 the suite runs and fails instead.
 */
export function terraformSkip(problem: string | null): string | false {
  if (problem === null) return false;
  if (process.env.CI === 'true' || process.env.REQUIRE_TERRAFORM === '1') return false;
  return `real Terraform CLI tests skipped: ${problem} (they are required when CI=true)`;
}

/** A server over TLS with its CA, addressed by Terraform as `localhost:<port>`. */
export interface TerraformSite {
  server: TestServer;
  /** The hostname (with port) in cloud/remote blocks and the credentials block. */
  host: string;
  caFile: string;
  caPem: string;
  /** JSON:API client of the site admin, trusting the CA. */
  admin: TfeHttp;
}

/** Starts a TLS server on a fresh database, with the job worker running as in production. */
export async function startTerraformSite(kind: DatabaseKind): Promise<TerraformSite> {
  const ca = opensslTestCa('Strongroom Terraform test CA');
  const cert = ca.issue('localhost');
  const server = await startTestServer(kind, { config: { tlsCertFile: cert.certFile, tlsKeyFile: cert.keyFile } });
  server.deps.worker.start();
  const port = new URL(server.url).port;
  return {
    server,
    host: `localhost:${port}`,
    caFile: ca.certFile,
    caPem: ca.certPem,
    admin: new TfeHttp(server.url, server.rootToken, ca.certPem),
  };
}

/** How a `cloud` block picks its workspaces. */
export type CloudWorkspaces = { name: string; project?: string } | { tags: string[]; project?: string };

/** A `terraform { cloud { … } }` block for the site. */
export function cloudBlock(site: TerraformSite, org: string, ws: CloudWorkspaces): string {
  const pick = 'name' in ws ? `name = ${JSON.stringify(ws.name)}` : `tags = ${JSON.stringify(ws.tags)}`;
  const project = ws.project === undefined ? '' : `\n      project = ${JSON.stringify(ws.project)}`;
  return `terraform {
  cloud {
    hostname     = ${JSON.stringify(site.host)}
    organization = ${JSON.stringify(org)}
    workspaces {
      ${pick}${project}
    }
  }
}
`;
}

/** A `terraform { backend "remote" { … } }` block for one workspace of the site, or those of a name prefix. */
export function remoteBackendBlock(
  site: TerraformSite,
  org: string,
  ws: { name: string } | { prefix: string },
): string {
  const pick = 'name' in ws ? `name = ${JSON.stringify(ws.name)}` : `prefix = ${JSON.stringify(ws.prefix)}`;
  return `terraform {
  backend "remote" {
    hostname     = ${JSON.stringify(site.host)}
    organization = ${JSON.stringify(org)}
    workspaces {
      ${pick}
    }
  }
}
`;
}

/** A `terraform_remote_state` data source reading another workspace of the site. */
export function remoteStateData(label: string, site: TerraformSite, org: string, workspace: string): string {
  return `data "terraform_remote_state" ${JSON.stringify(label)} {
  backend = "remote"
  config = {
    hostname     = ${JSON.stringify(site.host)}
    organization = ${JSON.stringify(org)}
    workspaces = {
      name = ${JSON.stringify(workspace)}
    }
  }
}
`;
}

export interface TerraformRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr together as one line of text: no colour codes, box drawing or line wrapping. */
  out: string;
}

/** A generous guard against a hung process; not a measure of speed. */
const RUN_LIMIT_MS = 180_000;
// Terraform colours its output even with TF_IN_AUTOMATION; the escape character is the point here.
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

function flat(text: string): string {
  return text.replace(ANSI, '').replace(/[│╷╵]/g, ' ').replace(/\s+/g, ' ').trim();
}

/** One isolated working directory, its configuration and the credentials it runs with. */
export class TerraformDir {
  readonly dir: string;
  private readonly env: NodeJS.ProcessEnv;

  constructor(site: TerraformSite, token: string, config: string) {
    this.dir = mkdtempSync(join(tmpdir(), 'strongroom-tf-'));
    const home = join(this.dir, '.home');
    mkdirSync(home);
    const cliConfig = join(home, 'cli.tfrc');
    writeFileSync(cliConfig, `credentials ${JSON.stringify(site.host)} {\n  token = ${JSON.stringify(token)}\n}\n`);
    this.write('main.tf', config);
    // Built from nothing, so that no TF_* variable, plugin cache or proxy of the caller leaks in.
    this.env = {
      PATH: process.env.PATH ?? '',
      HOME: home,
      TMPDIR: home,
      TF_CLI_CONFIG_FILE: cliConfig,
      TF_DATA_DIR: join(this.dir, '.terraform'),
      TF_IN_AUTOMATION: '1',
      TF_INPUT: '0',
      CHECKPOINT_DISABLE: '1',
      SSL_CERT_FILE: site.caFile,
      // Any host but the loopback would go through this proxy, which refuses at once.
      HTTPS_PROXY: 'http://127.0.0.1:9',
      HTTP_PROXY: 'http://127.0.0.1:9',
      NO_PROXY: 'localhost,127.0.0.1',
    };
  }

  write(name: string, content: string): void {
    writeFileSync(join(this.dir, name), content);
  }

  read(name: string): string {
    return readFileSync(join(this.dir, name), 'utf8');
  }

  /** Runs `terraform <args>` in the directory. */
  run(args: string[], env: Record<string, string> = {}): Promise<TerraformRun> {
    return this.start(args, env).done;
  }

  /**
   * Starts `terraform <args>`: `done` resolves when it exits, `output()` is what it printed so
   * far, `interrupt()` sends SIGINT as Ctrl-C does.
   */
  start(
    args: string[],
    env: Record<string, string> = {},
  ): { done: Promise<TerraformRun>; output(): string; interrupt(): void } {
    let stdout = '';
    let stderr = '';
    const child = spawn('terraform', args, {
      cwd: this.dir,
      env: { ...this.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const done = new Promise<TerraformRun>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const guard = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(guard);
        resolve({ code, stdout, stderr, out: flat(`${stdout}\n${stderr}`) });
      });
    });
    return { done, output: () => flat(`${stdout}\n${stderr}`), interrupt: () => child.kill('SIGINT') };
  }

  /** Runs and fails with everything printed unless the exit code is `expected`. */
  async ok(args: string[], expected = 0, env: Record<string, string> = {}): Promise<TerraformRun> {
    const r = await this.run(args, env);
    if (r.code !== expected) {
      throw new Error(`terraform ${args.join(' ')} exited ${r.code}, expected ${expected}:\n${r.out}`);
    }
    return r;
  }
}
