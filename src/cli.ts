#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { ConfigError, loadConfig } from './config.js';
import { parseSettingFlags, settingsHelp } from './cli/server-flags.js';
import { openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { runServer } from './main.js';
import { runPolicyCommand } from './cli/policy-command.js';
import { runPolicyServiceCommand } from './cli/policy-service-command.js';
import { runTokenCommand } from './cli/token-command.js';
import { runTfeCommand } from './cli/tfe-command.js';
import { CliError } from './cli/vault-api.js';
import type { CliIo } from './cli/vault-api.js';

const USAGE = `Usage: strongroom <command> [options]

Commands:
  server      Serve the Terraform state API (/api/v2) and the Vault-compatible PKI API (/v1)
  migrate     Apply pending database migrations and exit
  token       Create, look up and revoke tokens of a running server (strongroom token help)
  policy      Write, read, list and delete ACL policies of a running server (strongroom policy help)
  tfe         Create Terraform state users, organizations, teams and API tokens in the database (strongroom tfe help)
  policy-service  Run the reference external policy service for external-policy issuance (strongroom policy-service --help)
  help        Show this help

Settings (flag, then environment variable, then config file key of the same name):
${settingsHelp()}

Examples:
  strongroom server                                   # SQLite and blobs under ./data on 127.0.0.1:8200
  strongroom server --dev --dev-root-token root       # throwaway storage, fixed root token
  strongroom server --database-url postgres://user@db/strongroom --listen 0.0.0.0:8200
  strongroom migrate --database-url postgres://user@db/strongroom
  STRONGROOM_TOKEN=… strongroom policy write issuer issuer.hcl
  STRONGROOM_TOKEN=… strongroom token create --policy issuer --ttl 1h
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === 'policy-service') {
    const r = await runPolicyServiceCommand(rest, {
      out: (t) => process.stdout.write(t),
      err: (t) => process.stderr.write(t),
    });
    if (typeof r === 'number') return r;
    const stop = () => void r.close().then(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    return -1; // keeps running until a signal
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  switch (command) {
    case 'server': {
      const flags = settingsOnly(rest);
      await runServer(loadConfig(undefined, flags));
      return -1; // keeps running until a signal
    }
    case 'migrate': {
      const flags = settingsOnly(rest);
      const config = loadConfig(undefined, flags);
      const db = openDatabase({ url: config.databaseUrl, poolSize: 1 });
      try {
        const applied = await migrateToLatest(db);
        process.stdout.write(applied.length > 0 ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
      } finally {
        await db.destroy();
      }
      return 0;
    }
    case 'tfe':
      return runTfeCommand(rest, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
    case 'token':
    case 'policy': {
      const io: CliIo = {
        out: (t) => process.stdout.write(t),
        err: (t) => process.stderr.write(t),
        readFile: async (p) => (p === '-' ? readStdin() : readFile(p, 'utf8')),
      };
      const run = command === 'token' ? runTokenCommand : runPolicyCommand;
      try {
        return await run(rest, process.env, io);
      } catch (err) {
        if (!(err instanceof CliError)) throw err;
        process.stderr.write(`${err.message}\n`);
        return err.exitCode;
      }
    }
    default:
      process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

/** Settings flags, and nothing else: a stray word (`--dev-root-token` without its value, say) is an error, not ignored. */
function settingsOnly(argv: string[]): Record<string, string | boolean> {
  const { flags, positionals } = parseSettingFlags(argv);
  if (positionals.length > 0)
    throw new ConfigError([`unexpected argument${positionals.length > 1 ? 's' : ''}: ${positionals.join(' ')}`]);
  return flags;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
    else if (err instanceof TypeError && (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS'))
      process.stderr.write(`${err.message}\n\n${USAGE}`);
    else process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
