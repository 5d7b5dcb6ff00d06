import { parseArgs } from 'node:util';
import { CliError, EXIT_USAGE, callApi, resolveTarget } from './vault-api.js';
import type { ClientEnv, CliIo } from './vault-api.js';

export const POLICY_USAGE = `Usage: strongroom policy <write|read|list|delete> [options]

  write NAME FILE   Upload an ACL policy (HCL or JSON); FILE "-" reads standard input
  read NAME         Print a policy
  list              List policy names
  delete NAME       Delete a policy

Common: --address URL (STRONGROOM_ADDR, VAULT_ADDR; default http://127.0.0.1:8200)
        --token T (STRONGROOM_TOKEN, VAULT_TOKEN)
`;

/** `strongroom policy …`; returns the exit code. */
export async function runPolicyCommand(argv: string[], env: ClientEnv, io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
    io.out(POLICY_USAGE);
    return sub === undefined ? EXIT_USAGE : 0;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: { address: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    io.out(POLICY_USAGE);
    return 0;
  }
  const target = resolveTarget(env, values);
  const name = positionals[0];
  const needName = (): string => {
    if (!name) throw new CliError(`policy ${sub} needs a policy name\n\n${POLICY_USAGE}`, EXIT_USAGE);
    return encodeURIComponent(name);
  };
  switch (sub) {
    case 'write': {
      const file = positionals[1];
      if (!file) throw new CliError(`policy write needs NAME and FILE\n\n${POLICY_USAGE}`, EXIT_USAGE);
      let policy: string;
      try {
        policy = await io.readFile(file);
      } catch (err) {
        throw new CliError(`cannot read ${file}: ${(err as Error).message}`, EXIT_USAGE);
      }
      await callApi(target, 'PUT', `sys/policies/acl/${needName()}`, { policy });
      io.out(`Success! Uploaded policy: ${name}\n`);
      return 0;
    }
    case 'read': {
      const res = await callApi(target, 'GET', `sys/policies/acl/${needName()}`);
      const policy = String((res?.['data'] as Record<string, unknown> | undefined)?.['policy'] ?? '');
      io.out(policy.endsWith('\n') ? policy : `${policy}\n`);
      return 0;
    }
    case 'list': {
      const res = await callApi(target, 'GET', 'sys/policies/acl?list=true');
      const keys = ((res?.['data'] as Record<string, unknown> | undefined)?.['keys'] ?? []) as string[];
      io.out(keys.map((k) => `${k}\n`).join(''));
      return 0;
    }
    case 'delete':
      await callApi(target, 'DELETE', `sys/policies/acl/${needName()}`);
      io.out(`Success! Deleted policy: ${name}\n`);
      return 0;
    default:
      throw new CliError(`unknown policy command "${sub}"\n\n${POLICY_USAGE}`, EXIT_USAGE);
  }
}
