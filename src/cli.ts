#!/usr/bin/env node
import cluster from 'node:cluster';
import { readFile } from 'node:fs/promises';
import { ConfigError, loadConfig } from './config.js';
import { parseSettingFlags, settingsHelp } from './cli/server-flags.js';
import { openDatabase } from './db/database.js';
import { migrateWithProgress } from './db/migrate.js';
import { runServer } from './main.js';
import { runClusterPrimary, runClusterWorker } from './cluster.js';
import { POLICY_USAGE, runPolicyCommand } from './cli/policy-command.js';
import { ROTATE_MASTER_KEY_USAGE, runRotateMasterKeyCommand } from './cli/rotate-master-key-command.js';
import { POLICY_SERVICE_USAGE, runPolicyServiceCommand } from './cli/policy-service-command.js';
import { TOKEN_USAGE, runTokenCommand } from './cli/token-command.js';
import { TFE_USAGE, runTfeCommand } from './cli/tfe-command.js';
import { ADMIN_TOKEN_USAGE, runAdminTokenCommand } from './cli/admin-token-command.js';
import { runTfeClientCommand } from './cli/tfe-client-command.js';
import { BACKUP_USAGE, RESTORE_USAGE, runBackupCommand, runRestoreCommand } from './cli/backup-command.js';
import { CliError } from './cli/vault-api.js';
import type { CliIo } from './cli/vault-api.js';

const USAGE = `Usage: strongroom <command> [options]

Commands:
  server      Serve the Terraform state API (/api/v2) and the Vault-compatible PKI API (/v1)
  migrate     Apply pending database migrations and exit
  token       Create, look up and revoke tokens of a running server (strongroom token help)
  policy      Write, read, list and delete ACL policies of a running server (strongroom policy help)
  tfe         Terraform state: users, organizations, teams and API tokens in the database; workspaces,
              locks and state of a running server (strongroom tfe help)
  rotate-master-key  Rotate the master key of a running server, re-sealing every secret
  admin-token Make, list and revoke admin tokens in the database, e.g. for a lost initial token
  backup      Snapshot the storage of a running server into one file (not the master key)
  restore     Restore such a file onto an empty data directory or PostgreSQL database
  policy-service  Run the reference external policy service for external-policy issuance
  help        Show this help

"strongroom <command> --help" shows a command's own help.

Settings of server, migrate, tfe, admin-token, backup and restore (a flag beats the environment variable, which
beats the key in the JSON config file named by --config):
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
    process.stdout.write(COMMAND_HELP[command] ?? USAGE);
    return 0;
  }
  // What these commands write (database, WAL, blobs, keys, locks, backups) is the server user's alone.
  if (PRIVATE_FILE_COMMANDS.has(command)) process.umask(0o077);
  switch (command) {
    case 'server': {
      // A worker of --workers N takes its settings from the primary (cluster.ts).
      if (cluster.isWorker) {
        await runClusterWorker();
        return -1;
      }
      const config = loadConfig(undefined, settingsOnly(rest));
      await (config.workers > 1 ? runClusterPrimary(config) : runServer(config));
      return -1; // keeps running until a signal
    }
    case 'migrate': {
      const flags = settingsOnly(rest);
      const config = loadConfig(undefined, flags);
      const db = openDatabase({ url: config.databaseUrl, poolSize: 1 });
      try {
        // Progress on a terminal; scripts get the one line below.
        const tty = process.stderr.isTTY === true;
        const applied = await migrateWithProgress(db, (step) => {
          if (!tty) return;
          const at = `[${step.index}/${step.total}] ${step.name}`;
          process.stderr.write(step.ms === undefined ? `applying ${at} ...` : ` done (${step.ms} ms)\n`);
        });
        process.stdout.write(applied.length > 0 ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
      } finally {
        await db.destroy();
      }
      return 0;
    }
    case 'backup':
    case 'restore': {
      const io = {
        out: (t: string) => process.stdout.write(t),
        err: (t: string) => process.stderr.write(t),
        tty: process.stderr.isTTY === true,
      };
      return command === 'backup' ? runBackupCommand(rest, io) : runRestoreCommand(rest, io);
    }
    case 'admin-token':
      return runAdminTokenCommand(rest, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
    case 'tfe':
      if (rest[0] === 'workspace' || rest[0] === 'state') {
        const io = {
          out: (t: string | Buffer) => process.stdout.write(t),
          err: (t: string) => process.stderr.write(t),
          tty: process.stderr.isTTY === true,
        };
        return reportCliError(() => runTfeClientCommand(rest, process.env, io));
      }
      return runTfeCommand(rest, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
    case 'rotate-master-key':
    case 'token':
    case 'policy': {
      const io: CliIo = {
        out: (t) => process.stdout.write(t),
        err: (t) => process.stderr.write(t),
        readFile: async (p) => (p === '-' ? readStdin() : readFile(p, 'utf8')),
      };
      const run =
        command === 'token' ? runTokenCommand : command === 'policy' ? runPolicyCommand : runRotateMasterKeyCommand;
      return reportCliError(() => run(rest, process.env, io));
    }
    default:
      process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

const SERVER_USAGE = `Usage: strongroom server [settings]

Serves the Terraform state API (/api/v2) and the Vault-compatible API (/v1). The first start
makes the data directory, the master key and an initial admin token, printed once (lost it?
strongroom admin-token create). Stops gracefully on SIGTERM or SIGINT; SIGHUP reloads the TLS
certificate and key from their files.

Settings (a flag beats the environment variable, which beats the key in the --config file):
${settingsHelp()}
`;

const MIGRATE_USAGE = `Usage: strongroom migrate [settings]

Applies pending database migrations to the database the settings name, then exits (the server
also applies them at start). On a terminal it shows each migration as it runs.

Settings (only those naming the database matter: --data-dir, --database-url, --config):
${settingsHelp()}
`;

const PRIVATE_FILE_COMMANDS = new Set(['server', 'migrate', 'admin-token', 'tfe', 'backup', 'restore']);

/** What `strongroom <command> --help` prints. */
const COMMAND_HELP: Readonly<Record<string, string>> = {
  server: SERVER_USAGE,
  migrate: MIGRATE_USAGE,
  tfe: TFE_USAGE,
  token: TOKEN_USAGE,
  policy: POLICY_USAGE,
  'rotate-master-key': ROTATE_MASTER_KEY_USAGE,
  'policy-service': POLICY_SERVICE_USAGE,
  'admin-token': ADMIN_TOKEN_USAGE,
  backup: BACKUP_USAGE,
  restore: RESTORE_USAGE,
};

/** Runs a client command; its CliError is printed and becomes the exit code. */
async function reportCliError(run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return err.exitCode;
  }
}

/**
 * Settings flags, and nothing else: a stray word (`--dev-root-token` without its value, say) is an error, not ignored.
 */
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
    // At once: a failed start must not linger on whatever it had opened (stderr is written synchronously).
    process.exit(1);
  },
);
