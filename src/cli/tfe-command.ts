import { AdminTokenRepo } from '../admin/admin-token-repo.js';
import { AdminTokenService } from '../admin/admin-token-service.js';
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { systemClock } from '../shared/clock.js';
import { parseDurationSeconds } from '../shared/durations.js';
import { isDomainError } from '../shared/errors.js';
import type { Actor } from '../tfe/identity/actor.js';
import { buildTfeIdentityLayer } from '../tfe/tfe-services.js';
import { parseSettingFlags } from './server-flags.js';
import { TFE_CLIENT_USAGE } from './tfe-client-command.js';

export const TFE_USAGE = `Usage: strongroom tfe <command> [options] [settings]

In the database named by the usual settings (--database-url, --data-dir, …), as a site admin:
users, organizations, teams and API tokens.

  user create NAME [--email E] [--site-admin]     create a user
  user list                                        list users
  org create NAME --email E                        create an organization (owned by the site admin)
  team create ORG NAME [--manage-workspaces] [--read-workspaces]
                                                   create a team; prints its id
  team add-member TEAM_ID USERNAME...              add users to a team
  team grant TEAM_ID WORKSPACE_ID ACCESS [--state-versions none|read-outputs|read|write] [--workspace-locking]
                                                   give a team access to a workspace (read, plan, write, admin, custom)
  token create (--user NAME | --team TEAM_ID | --org ORG) [--description D] [--expires-in 30d]
                                                   create an API token; prints it once on stdout

${TFE_CLIENT_USAGE}
Examples:
  strongroom tfe user create alice
  strongroom tfe token create --user alice --description laptop
  strongroom tfe team create acme deployers --manage-workspaces
`;

export interface TfeCliIo {
  out(text: string): void;
  err(text: string): void;
}

const OWN_OPTIONS: Record<string, 'string' | 'boolean'> = {
  email: 'string',
  'site-admin': 'boolean',
  'manage-workspaces': 'boolean',
  'read-workspaces': 'boolean',
  'state-versions': 'string',
  'workspace-locking': 'boolean',
  user: 'string',
  team: 'string',
  org: 'string',
  description: 'string',
  'expires-in': 'string',
};

class UsageError extends Error {}

/** Takes this command's own options out of argv; the rest are server settings and positionals. */
function splitOptions(argv: string[]): { own: Record<string, string | boolean>; rest: string[] } {
  const own: Record<string, string | boolean> = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    const kind = m ? OWN_OPTIONS[m[1] as string] : undefined;
    if (!m || !kind) {
      rest.push(arg);
      continue;
    }
    const name = m[1] as string;
    if (kind === 'boolean') own[name] = m[2] === undefined ? true : m[2] !== 'false';
    else if (m[2] !== undefined) own[name] = m[2];
    else {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`--${name} needs a value`);
      own[name] = v;
    }
  }
  return { own, rest };
}

/** `strongroom tfe …`; returns the exit code. */
export async function runTfeCommand(argv: string[], io: TfeCliIo): Promise<number> {
  if (argv.length === 0 || ['help', '--help', '-h'].includes(argv[0] as string)) {
    io.out(TFE_USAGE);
    return argv.length === 0 ? 2 : 0;
  }
  let parsed: { own: Record<string, string | boolean>; positionals: string[]; flags: Record<string, string | boolean> };
  try {
    const { own, rest } = splitOptions(argv);
    const { flags, positionals } = parseSettingFlags(rest);
    parsed = { own, positionals, flags };
  } catch (err) {
    io.err(`${err instanceof Error ? err.message : String(err)}\n\n${TFE_USAGE}`);
    return 2;
  }
  const config = loadConfig(undefined, parsed.flags);
  const db = openDatabase({ url: config.databaseUrl, poolSize: 1 });
  try {
    await migrateToLatest(db);
    const adminTokens = new AdminTokenService({
      repo: new AdminTokenRepo({ db: db.kysely, units: db.units }),
      clock: systemClock,
    });
    const tfe = buildTfeIdentityLayer({ db, clock: systemClock, adminTokens });
    const adminUser = await tfe.identity.siteAdminUser();
    const admin: Actor = {
      kind: 'user',
      userId: adminUser.id,
      username: adminUser.username,
      siteAdmin: true,
      tokenId: null,
    };
    return await dispatch(tfe, admin, parsed.positionals, parsed.own, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\n\n${TFE_USAGE}`);
      return 2;
    }
    if (isDomainError(err)) {
      io.err(`error: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await db.destroy();
  }
}

type Layer = ReturnType<typeof buildTfeIdentityLayer>;

function str(v: string | boolean | undefined): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

async function dispatch(
  tfe: Layer,
  admin: Actor,
  pos: string[],
  own: Record<string, string | boolean>,
  io: TfeCliIo,
): Promise<number> {
  const [noun, verb, ...args] = pos;
  const need = (n: number, what: string) => {
    if (args.length < n) throw new UsageError(`${noun} ${verb} needs ${what}`);
  };
  switch (`${noun} ${verb}`) {
    case 'user create': {
      need(1, 'NAME');
      const u = await tfe.identity.createUser(admin, {
        username: args[0] as string,
        email: str(own.email),
        siteAdmin: own['site-admin'] === true,
      });
      io.out(`${u.id}\n`);
      return 0;
    }
    case 'user list': {
      for (const u of await tfe.identity.listUsers(admin))
        io.out(`${u.id}\t${u.username}${u.siteAdmin ? '\tsite-admin' : ''}\n`);
      return 0;
    }
    case 'org create': {
      need(1, 'NAME');
      const email = str(own.email);
      if (!email) throw new UsageError('org create needs --email');
      const v = await tfe.organizations.create(admin, { name: args[0] as string, email });
      io.out(`${v.organization.name}\t${v.organization.id}\n`);
      return 0;
    }
    case 'team create': {
      need(2, 'ORG and NAME');
      const { team: t } = await tfe.teams.create(admin, args[0] as string, {
        name: args[1] as string,
        organizationAccess: {
          'manage-workspaces': own['manage-workspaces'] === true,
          'read-workspaces': own['read-workspaces'] === true,
        },
      });
      io.out(`${t.id}\n`);
      return 0;
    }
    case 'team add-member': {
      need(2, 'TEAM_ID and at least one USERNAME');
      await tfe.teams.addMembers(admin, args[0] as string, args.slice(1));
      return 0;
    }
    case 'team grant': {
      need(3, 'TEAM_ID, WORKSPACE_ID and ACCESS');
      const g = await tfe.teamAccess.create(admin, args[0] as string, args[1] as string, {
        access: args[2],
        stateVersions: str(own['state-versions']),
        workspaceLocking: own['workspace-locking'] === true ? true : undefined,
      });
      io.out(`${g.id}\n`);
      return 0;
    }
    case 'token create':
      return tokenCreate(tfe, admin, own, io);
    default:
      throw new UsageError(`unknown command "tfe ${pos.join(' ')}"`);
  }
}

async function tokenCreate(
  tfe: Layer,
  admin: Actor,
  own: Record<string, string | boolean>,
  io: TfeCliIo,
): Promise<number> {
  const owners = (['user', 'team', 'org'] as const).filter((k) => typeof own[k] === 'string');
  if (owners.length !== 1)
    throw new UsageError('token create needs exactly one of --user NAME, --team TEAM_ID, --org ORG');
  const expiresIn = str(own['expires-in']);
  const expiredAt = expiresIn
    ? new Date(systemClock.now().getTime() + parseDurationSeconds(expiresIn, 'expires-in') * 1000)
    : null;
  const input = { description: str(own.description) ?? null, expiredAt };
  let created;
  switch (owners[0]) {
    case 'user': {
      const user = await tfe.identity.userByName(admin, own.user as string);
      created = await tfe.tokens.createUserToken(admin, user.id, input);
      break;
    }
    case 'team':
      created = await tfe.tokens.createTeamToken(admin, own.team as string, input);
      break;
    default:
      created = await tfe.tokens.createOrganizationToken(admin, own.org as string, input);
  }
  io.err(
    `created ${created.token.kind} token ` +
      `${created.token.id}${expiredAt ? ` (expires ${expiredAt.toISOString()})` : ''}; it is shown only once\n`,
  );
  io.out(`${created.secret}\n`);
  return 0;
}
