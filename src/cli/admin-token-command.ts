import { AdminTokenRepo } from '../admin/admin-token-repo.js';
import { AdminTokenService } from '../admin/admin-token-service.js';
import { ConfigError, loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { systemClock } from '../shared/clock.js';
import { isDomainError } from '../shared/errors.js';
import { parseSettingFlags } from './server-flags.js';

export const ADMIN_TOKEN_USAGE = `Usage: strongroom admin-token <create|list|revoke> [settings]

Manage admin tokens (each is a Vault root token under /v1 and a site-admin API token under
/api/v2) directly in the server's database. Run it on the server's machine with the server's
settings (--data-dir, --database-url, a config file or STRONGROOM_* variables), as the
server itself would find its database. The server may keep running.

  create          make a new admin token and print it once on stdout (for a lost initial token)
  list            list admin tokens: an id (the start of the token's hash) and when each was made
  revoke TOKEN    revoke an admin token, given the token itself or its id from "list"
                  (running servers stop honouring it within a few seconds)

Examples:
  strongroom admin-token create --data-dir ./data
  strongroom admin-token revoke 3fa9c1d2e4b5 --database-url postgres://user@db/strongroom
`;

export interface AdminTokenCliIo {
  out(text: string): void;
  err(text: string): void;
}

/** `strongroom admin-token …`; returns the exit code. */
export async function runAdminTokenCommand(argv: string[], io: AdminTokenCliIo): Promise<number> {
  const { flags, positionals } = parseSettingFlags(argv);
  const [sub, ...args] = positionals;
  if (sub === undefined || sub === 'help') {
    io.out(ADMIN_TOKEN_USAGE);
    return sub === undefined ? 2 : 0;
  }
  const expected = sub === 'revoke' ? 1 : 0;
  if (!['create', 'list', 'revoke'].includes(sub) || args.length !== expected) {
    const problem =
      sub === 'revoke'
        ? 'admin-token revoke needs one TOKEN or id'
        : `unknown command "admin-token ${positionals.join(' ')}"`;
    io.err(`${problem}\n\n${ADMIN_TOKEN_USAGE}`);
    return 2;
  }
  const config = loadConfig(undefined, flags);
  if (config.dev) throw new ConfigError(['admin-token works on a lasting database; --dev storage is thrown away']);
  const db = openDatabase({ url: config.databaseUrl, poolSize: 1 });
  try {
    await migrateToLatest(db);
    const service = new AdminTokenService({
      repo: new AdminTokenRepo({ db: db.kysely, units: db.units }),
      clock: systemClock,
    });
    switch (sub) {
      case 'create': {
        const made = await service.create();
        io.err(`created admin token ${made.id}; it is shown only this once and stored only as a hash\n`);
        io.out(`${made.token}\n`);
        return 0;
      }
      case 'list': {
        for (const t of await service.list()) io.out(`${t.id}\t${t.createdAt.toISOString()}\n`);
        return 0;
      }
      default: {
        const id = await service.revoke(args[0] as string);
        io.err(`revoked admin token ${id}\n`);
        return 0;
      }
    }
  } catch (err) {
    if (!isDomainError(err)) throw err;
    io.err(`error: ${err.message}\n`);
    return 1;
  } finally {
    await db.destroy();
  }
}
