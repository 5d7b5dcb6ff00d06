import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { call, expectOk, resolveTfeTarget, send } from './tfe-api.js';
import type { TfeTarget } from './tfe-api.js';
import { CliError, EXIT_USAGE } from './vault-api.js';
import type { ClientEnv } from './vault-api.js';

export const TFE_CLIENT_USAGE = `Against a running server (/api/v2, as the Terraform CLI talks to it):

  workspace create ORG NAME                  create a workspace (local execution); prints its id
  workspace lock ORG NAME [--reason R]       lock a workspace
  workspace unlock ORG NAME [--force]        unlock it (--force: whoever holds the lock)
  state push ORG NAME FILE [--force]         make FILE (a terraform.tfstate) the workspace's current state;
                                             an unlocked workspace is locked for the push and unlocked after
  state pull ORG NAME [--output FILE]        print (or write) the workspace's current state

  --address URL (STRONGROOM_ADDR; default http://127.0.0.1:8200)  --token T (STRONGROOM_TOKEN, TFE_TOKEN)
  --ca-cert FILE (STRONGROOM_CACERT, else SSL_CERT_FILE): the CA to check an https server against
`;

export interface TfeClientIo {
  out(text: string | Buffer): void;
  err(text: string): void;
  /** Whether progress lines may be drawn (stderr is a terminal). */
  tty: boolean;
}

/** `strongroom tfe workspace …` and `strongroom tfe state …`; returns the exit code. */
export async function runTfeClientCommand(argv: string[], env: ClientEnv, io: TfeClientIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      address: { type: 'string' },
      token: { type: 'string' },
      'ca-cert': { type: 'string' },
      reason: { type: 'string' },
      force: { type: 'boolean' },
      output: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [noun, verb, org, name, file] = positionals;
  const command = `${noun} ${verb}`;
  const arity: Record<string, number> = {
    'workspace create': 4,
    'workspace lock': 4,
    'workspace unlock': 4,
    'state push': 5,
    'state pull': 4,
  };
  if (arity[command] === undefined) throw new CliError(`unknown command "tfe ${positionals.join(' ')}"`, EXIT_USAGE);
  if (positionals.length !== arity[command])
    throw new CliError(
      `tfe ${command} needs ${arity[command] === 5 ? 'ORG, NAME and FILE' : 'ORG and NAME'}`,
      EXIT_USAGE,
    );
  const target = resolveTfeTarget(env, { address: values.address, token: values.token, caCert: values['ca-cert'] });
  const ws = `/organizations/${encodeURIComponent(org as string)}/workspaces/${encodeURIComponent(name as string)}`;
  switch (command) {
    case 'workspace create': {
      const doc = await call(target, 'POST', `/organizations/${encodeURIComponent(org as string)}/workspaces`, {
        data: { type: 'workspaces', attributes: { name, 'execution-mode': 'local' } },
      });
      io.out(`${dataOf(doc).id}\n`);
      return 0;
    }
    case 'workspace lock': {
      const id = await workspaceId(target, ws);
      await call(target, 'POST', `/workspaces/${id}/actions/lock`, {
        reason: values.reason ?? 'locked by strongroom tfe',
      });
      io.err(`locked ${org}/${name} (${id})\n`);
      return 0;
    }
    case 'workspace unlock': {
      const id = await workspaceId(target, ws);
      await call(target, 'POST', `/workspaces/${id}/actions/${values.force ? 'force-unlock' : 'unlock'}`);
      io.err(`unlocked ${org}/${name} (${id})\n`);
      return 0;
    }
    case 'state push':
      return statePush(target, ws, file as string, values.force === true, io);
    default:
      return statePull(target, ws, values.output, io);
  }
}

function dataOf(doc: Record<string, unknown> | undefined): { id: string; attributes: Record<string, unknown> } {
  return (doc?.['data'] ?? {}) as { id: string; attributes: Record<string, unknown> };
}

async function workspaceId(target: TfeTarget, ws: string): Promise<string> {
  return dataOf(await call(target, 'GET', ws)).id;
}

/**
 * Creates a state version from FILE the way Terraform does: the version first (serial,
 * lineage and MD5 read from the file), then the bytes to its one-time upload URL, streamed.
 */
async function statePush(
  target: TfeTarget,
  ws: string,
  file: string,
  force: boolean,
  io: TfeClientIo,
): Promise<number> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`, EXIT_USAGE);
  }
  let state: { serial?: unknown; lineage?: unknown };
  try {
    state = JSON.parse(bytes.toString('utf8')) as typeof state;
  } catch (err) {
    throw new CliError(`${file} is not a Terraform state (not JSON: ${(err as Error).message})`, EXIT_USAGE);
  }
  if (typeof state.serial !== 'number' || typeof state.lineage !== 'string')
    throw new CliError(`${file} is not a Terraform state (no serial and lineage)`, EXIT_USAGE);
  const workspace = dataOf(await call(target, 'GET', ws));
  const lockedHere = workspace.attributes['locked'] !== true;
  if (lockedHere)
    await call(target, 'POST', `/workspaces/${workspace.id}/actions/lock`, { reason: 'strongroom tfe state push' });
  try {
    const created = dataOf(
      await call(target, 'POST', `/workspaces/${workspace.id}/state-versions`, {
        data: {
          type: 'state-versions',
          attributes: {
            serial: state.serial,
            lineage: state.lineage,
            md5: createHash('md5').update(bytes).digest('hex'),
            ...(force ? { force: true } : {}),
          },
        },
      }),
    );
    const uploadUrl = created.attributes['hosted-state-upload-url'];
    if (typeof uploadUrl !== 'string') throw new CliError('the server gave no upload URL for the state', 2);
    const size = statSync(file).size;
    const stream = createReadStream(file);
    if (io.tty) {
      let sent = 0;
      stream.on('data', (c) => {
        sent += c.length;
        io.err(`\ruploading ${file}: ${Math.floor((sent * 100) / Math.max(size, 1))}% of ${size} bytes`);
      });
      stream.on('end', () => io.err('\n'));
    }
    expectOk(await send(target, 'PUT', uploadUrl, { stream, length: size }, { auth: false }), 'state upload');
    io.err(`pushed serial ${state.serial} of ${file} as ${created.id}\n`);
    io.out(`${created.id}\n`);
  } finally {
    if (lockedHere) await call(target, 'POST', `/workspaces/${workspace.id}/actions/unlock`);
  }
  return 0;
}

async function statePull(target: TfeTarget, ws: string, output: string | undefined, io: TfeClientIo): Promise<number> {
  const id = await workspaceId(target, ws);
  const current = dataOf(await call(target, 'GET', `/workspaces/${id}/current-state-version`));
  const url = current.attributes['hosted-state-download-url'];
  if (typeof url !== 'string') throw new CliError(`state version ${current.id} has no state to download`, 2);
  const answer = await send(target, 'GET', url);
  if (answer.status !== 200) expectOk(answer, 'state download');
  if (output) {
    writeFileSync(output, answer.body);
    io.err(`wrote serial ${String(current.attributes['serial'])} (${current.id}) to ${output}\n`);
  } else io.out(answer.body);
  return 0;
}
