#!/usr/bin/env node
import { ConfigError, loadConfig } from './config.js';
import { parseSettingFlags, settingsHelp } from './cli/server-flags.js';
import { openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { runServer } from './main.js';

const USAGE = `Usage: strongroom <command> [options]

Commands:
  server      Serve the Terraform state API (/api/v2) and the Vault-compatible PKI API (/v1)
  migrate     Apply pending database migrations and exit
  help        Show this help

Settings (flag, then environment variable, then config file key of the same name):
${settingsHelp()}

Examples:
  strongroom server                                   # SQLite and blobs under ./data on 127.0.0.1:8200
  strongroom server --dev --dev-root-token root       # throwaway storage, fixed root token
  strongroom server --database-url postgres://user@db/strongroom --listen 0.0.0.0:8200
  strongroom migrate --database-url postgres://user@db/strongroom
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  switch (command) {
    case 'server': {
      const { flags } = parseSettingFlags(rest);
      await runServer(loadConfig(process.env, flags));
      return -1; // keeps running until a signal
    }
    case 'migrate': {
      const { flags } = parseSettingFlags(rest);
      const config = loadConfig(process.env, flags);
      const db = openDatabase({ url: config.databaseUrl, poolSize: 1 });
      try {
        const applied = await migrateToLatest(db);
        process.stdout.write(applied.length > 0 ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
      } finally {
        await db.destroy();
      }
      return 0;
    }
    default:
      process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
    else if (err instanceof TypeError && (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) process.stderr.write(`${err.message}\n\n${USAGE}`);
    else process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
