import { parseArgs } from 'node:util';
import { callApi, resolveTarget } from './vault-api.js';
import type { ClientEnv, CliIo } from './vault-api.js';

export const ROTATE_MASTER_KEY_USAGE = `Usage: strongroom rotate-master-key [--no-wait] [options]

Rotates the master key of a running server (PUT /v1/sys/rotate, root token only) and follows
the re-sealing of every sealed value until the old key opens nothing.

  With the key in <data_dir>/master.key, the server makes a new key, writes it to that file
  ahead of the old one, and removes the old one once every value is re-sealed.
  With STRONGROOM_MASTER_KEY, first make the new key current on every node with the old one
  in STRONGROOM_OTHER_MASTER_KEYS (docs/operations.md); this then re-seals under it.

  --no-wait         Start the rotation and return (follow it with GET /v1/sys/key-status)
  --address URL     (STRONGROOM_ADDR, VAULT_ADDR; default http://127.0.0.1:8200)
  --token T         a root token (STRONGROOM_TOKEN, VAULT_TOKEN)
`;

/** `strongroom rotate-master-key`; returns the exit code. */
export async function runRotateMasterKeyCommand(
  argv: string[],
  env: ClientEnv,
  io: CliIo,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      address: { type: 'string' },
      token: { type: 'string' },
      'no-wait': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    io.out(ROTATE_MASTER_KEY_USAGE);
    return 0;
  }
  const target = resolveTarget(env, values);
  await callApi(target, 'PUT', 'sys/rotate');
  const status = async () => (await callApi(target, 'GET', 'sys/key-status'))?.['data'] as KeyStatus;
  let s = await status();
  io.out(`Rotation to master key ${s.key_id} started.\n`);
  if (values['no-wait']) return 0;
  let last = -1;
  while (s.rotation?.state !== 'done') {
    if (s.rotation && s.rotation.resealed !== last) {
      last = s.rotation.resealed;
      io.err(`re-sealed ${last} values (pass ${s.rotation.passes + 1})\n`);
    }
    await sleep(500);
    s = await status();
  }
  io.out(
    `Success! Every sealed value is under master key ${s.key_id} (${s.rotation.resealed} re-sealed); ` +
      (s.key_source === 'file'
        ? 'the old key is gone from the key file.\n'
        : 'remove the old key from STRONGROOM_OTHER_MASTER_KEYS on every node.\n'),
  );
  return 0;
}

interface KeyStatus {
  key_id: string;
  key_source: 'file' | 'environment';
  rotation: { state: 'running' | 'done'; resealed: number; passes: number } | null;
}
