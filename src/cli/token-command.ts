import { parseArgs } from 'node:util';
import { CliError, EXIT_USAGE, callApi, formatDuration, formatTable, resolveTarget } from './vault-api.js';
import type { ClientEnv, CliIo } from './vault-api.js';

export const TOKEN_USAGE = `Usage: strongroom token <create|lookup|revoke> [options]

  create   Create a token (POST /v1/auth/token/create)
             --policy P        policy to attach; repeat or comma-separate (default: the caller's)
             --ttl 1h          initial TTL        --explicit-max-ttl 24h   hard limit
             --display-name N  --meta k=v (repeat) --num-uses N  --period 24h
             --orphan          no parent (needs root or sudo)
             --no-default-policy  --renewable=false
  lookup   Show a token (yours when none is given)
  revoke   Revoke a token and its children

Common: --address URL (STRONGROOM_ADDR, VAULT_ADDR; default http://127.0.0.1:8200)
        --token T (STRONGROOM_TOKEN, VAULT_TOKEN)  --format table|json  --field NAME
`;

const COMMON = {
  address: { type: 'string' },
  token: { type: 'string' },
  format: { type: 'string', default: 'table' },
  field: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `strongroom token …`; returns the exit code. */
export async function runTokenCommand(argv: string[], env: ClientEnv, io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
    io.out(TOKEN_USAGE);
    return sub === undefined ? EXIT_USAGE : 0;
  }
  switch (sub) {
    case 'create':
      return tokenCreate(rest, env, io);
    case 'lookup':
      return tokenLookup(rest, env, io);
    case 'revoke':
      return tokenRevoke(rest, env, io);
    default:
      throw new CliError(`unknown token command "${sub}"\n\n${TOKEN_USAGE}`, EXIT_USAGE);
  }
}

async function tokenCreate(argv: string[], env: ClientEnv, io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...COMMON,
      policy: { type: 'string', multiple: true },
      ttl: { type: 'string' },
      'explicit-max-ttl': { type: 'string' },
      period: { type: 'string' },
      'display-name': { type: 'string' },
      meta: { type: 'string', multiple: true },
      'num-uses': { type: 'string' },
      orphan: { type: 'boolean' },
      'no-default-policy': { type: 'boolean' },
      renewable: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) {
    io.out(TOKEN_USAGE);
    return 0;
  }
  const body: Record<string, unknown> = {};
  const policies = (values.policy ?? [])
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter(Boolean);
  if (policies.length > 0) body['policies'] = policies;
  if (values.ttl) body['ttl'] = values.ttl;
  if (values['explicit-max-ttl']) body['explicit_max_ttl'] = values['explicit-max-ttl'];
  if (values.period) body['period'] = values.period;
  if (values['display-name']) body['display_name'] = values['display-name'];
  if (values['num-uses']) body['num_uses'] = values['num-uses'];
  if (values.orphan) body['no_parent'] = true;
  if (values['no-default-policy']) body['no_default_policy'] = true;
  if (values.renewable !== undefined) body['renewable'] = values.renewable;
  if (values.meta) {
    const meta: Record<string, string> = {};
    for (const kv of values.meta) {
      const i = kv.indexOf('=');
      if (i <= 0) throw new CliError(`--meta expects key=value, got "${kv}"`, EXIT_USAGE);
      meta[kv.slice(0, i)] = kv.slice(i + 1);
    }
    body['meta'] = meta;
  }
  const target = resolveTarget(env, values);
  const res = await callApi(target, 'POST', 'auth/token/create', body);
  const auth = (res?.['auth'] ?? {}) as Record<string, unknown>;
  const rows: Array<[string, unknown]> = [
    ['token', auth['client_token']],
    ['token_accessor', auth['accessor']],
    ['token_duration', formatDuration(Number(auth['lease_duration'] ?? 0))],
    ['token_renewable', auth['renewable']],
    ['token_policies', auth['token_policies']],
    ['identity_policies', []],
    ['policies', auth['policies']],
  ];
  if (auth['metadata'])
    for (const [k, v] of Object.entries(auth['metadata'] as Record<string, unknown>)) rows.push([`token_meta_${k}`, v]);
  return print(io, values, res, rows);
}

async function tokenLookup(argv: string[], env: ClientEnv, io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...COMMON, accessor: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  const target = resolveTarget(env, values);
  const subject = positionals[0];
  const res =
    subject === undefined
      ? await callApi(target, 'GET', 'auth/token/lookup-self')
      : values.accessor
        ? await callApi(target, 'POST', 'auth/token/lookup-accessor', { accessor: subject })
        : await callApi(target, 'POST', 'auth/token/lookup', { token: subject });
  const data = (res?.['data'] ?? {}) as Record<string, unknown>;
  return print(
    io,
    values,
    res,
    Object.entries(data).sort(([a], [b]) => a.localeCompare(b)),
  );
}

async function tokenRevoke(argv: string[], env: ClientEnv, io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...COMMON, accessor: { type: 'boolean' }, self: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  const target = resolveTarget(env, values);
  const subject = positionals[0];
  if (values.self) await callApi(target, 'POST', 'auth/token/revoke-self', {});
  else if (subject === undefined)
    throw new CliError('token revoke needs a token (or --accessor A, or --self)', EXIT_USAGE);
  else if (values.accessor) await callApi(target, 'POST', 'auth/token/revoke-accessor', { accessor: subject });
  else await callApi(target, 'POST', 'auth/token/revoke', { token: subject });
  io.out('Success! Revoked token (if it existed)\n');
  return 0;
}

function print(
  io: CliIo,
  values: { format?: string; field?: string },
  res: unknown,
  rows: Array<[string, unknown]>,
): number {
  if (values.field) {
    const hit = rows.find(([k]) => k === values.field);
    if (!hit) throw new CliError(`field "${values.field}" not present in the answer`, EXIT_USAGE);
    io.out(`${Array.isArray(hit[1]) ? hit[1].join(',') : String(hit[1])}\n`);
    return 0;
  }
  if (values.format === 'json') io.out(`${JSON.stringify(res, null, 2)}\n`);
  else if (values.format === 'table' || values.format === undefined) io.out(formatTable(rows));
  else throw new CliError(`unknown format "${values.format}" (table or json)`, EXIT_USAGE);
  return 0;
}
