import type { Clock } from '../../shared/clock.js';
import { forbidden, invalid, notFound } from '../../shared/errors.js';
import { tfeId } from '../../shared/ids.js';
import type { OrganizationService } from '../organizations/organization-service.js';
import type { Actor } from './actor.js';
import type { IdentityRepo } from './identity-repo.js';
import type { OrganizationAccessFlags, Team, TeamView, User } from './identity.js';
import { isValidTeamName, organizationAccessOf } from './identity.js';
import { teamPermissions } from './permissions.js';
import type { TeamPermissions } from './permissions.js';
import type { TokenActorCache } from './token-actor-cache.js';

export interface TeamInput {
  name?: string;
  visibility?: string;
  /** The flags the request names (routes check each is a boolean). */
  organizationAccess?: Partial<OrganizationAccessFlags>;
}

/**
 * Teams of an organization and their members. Every organization has an `owners`
 * team (created with it) that cannot be deleted or renamed, and that only owners may
 * change: its members and tokens are ownership itself (`manageOwnersTeam`).
 */
export class TeamService {
  constructor(
    private readonly deps: {
      repo: IdentityRepo;
      organizations: OrganizationService;
      clock: Clock;
      tokenCache: TokenActorCache;
    },
  ) {}

  private check(input: TeamInput): void {
    if (input.name !== undefined && !isValidTeamName(input.name))
      throw invalid('name may contain letters, digits, spaces, "-", "_" and "."', '/data/attributes/name');
    if (input.visibility !== undefined && input.visibility !== 'secret' && input.visibility !== 'organization') {
      throw invalid('visibility must be "secret" or "organization"', '/data/attributes/visibility');
    }
  }

  async create(actor: Actor, organization: string, input: TeamInput): Promise<TeamView> {
    const { organization: org, permissions } = await this.deps.organizations.authorize(
      actor,
      organization,
      'manageTeams',
    );
    if (input.name === undefined) throw invalid('name is required', '/data/attributes/name');
    this.check(input);
    if (input.name === 'owners') throw invalid('the owners team already exists', '/data/attributes/name');
    const team: Team = {
      id: tfeId('team'),
      organizationId: org.id,
      organization: org.name,
      name: input.name,
      visibility: input.visibility === 'organization' ? 'organization' : 'secret',
      isOwners: false,
      organizationAccess: { ...organizationAccessOf(false), ...input.organizationAccess },
      usersCount: 0,
      createdAt: this.deps.clock.now(),
    };
    await this.deps.repo.insertTeam(team);
    return { team, permissions: teamPermissions(permissions, team) };
  }

  async list(actor: Actor, organization: string): Promise<TeamView[]> {
    const { organization: org, permissions } = await this.deps.organizations.authorize(actor, organization);
    const teams = await this.deps.repo.teamsOfOrganization(org.id);
    return teams.map((team) => ({ team, permissions: teamPermissions(permissions, team) }));
  }

  /** A team the actor may see (any reader of its organization); not_found otherwise. */
  async get(actor: Actor, teamId: string): Promise<Team> {
    return (await this.view(actor, teamId)).team;
  }

  /** get() with the caller's permissions on the team. */
  async view(actor: Actor, teamId: string): Promise<TeamView> {
    const team = await this.deps.repo.teamById(teamId);
    if (!team) throw notFound('team not found');
    const { permissions } = await this.deps.organizations.authorize(actor, team.organization).catch(() => {
      throw notFound('team not found');
    });
    return { team, permissions: teamPermissions(permissions, team) };
  }

  /** A team the actor may change (`need` of teamPermissions); not_found otherwise, as HCP hides it. */
  private async changeable(actor: Actor, teamId: string, need: keyof TeamPermissions): Promise<Team> {
    const { team, permissions } = await this.view(actor, teamId);
    if (!permissions[need]) throw forbidden(`not allowed to change team ${team.name}`);
    return team;
  }

  async update(actor: Actor, teamId: string, input: TeamInput): Promise<TeamView> {
    const team = await this.changeable(actor, teamId, 'updateVisibility');
    this.check(input);
    if (team.isOwners && input.name !== undefined && input.name !== team.name)
      throw invalid('the owners team cannot be renamed', '/data/attributes/name');
    // The owners team holds every flag; naming them true changes nothing, anything else would.
    const lowered = Object.entries(input.organizationAccess ?? {}).find(([, v]) => v === false);
    if (team.isOwners && lowered)
      throw invalid(
        `the owners team has every organization access; ${lowered[0]} cannot be turned off`,
        `/data/attributes/organization-access/${lowered[0]}`,
      );
    await this.deps.repo.updateTeam(
      team.id,
      { ...input, organizationAccess: team.isOwners ? undefined : input.organizationAccess },
      team.organizationAccess,
    );
    // A team token's actor carries the team name; organization access decides permissions.
    this.deps.tokenCache.clear();
    return this.view(actor, team.id);
  }

  async delete(actor: Actor, teamId: string): Promise<void> {
    const { team, permissions } = await this.view(actor, teamId);
    if (!permissions.destroy) throw forbidden(team.isOwners ? 'the owners team cannot be deleted' : 'not allowed');
    await this.deps.repo.deleteTeam(team.id);
    this.deps.tokenCache.clear();
  }

  async members(actor: Actor, teamId: string): Promise<User[]> {
    const team = await this.get(actor, teamId);
    return this.deps.repo.membersOf(team.id);
  }

  /** Adds users by username (as HCP's team membership API does). */
  async addMembers(actor: Actor, teamId: string, usernames: string[]): Promise<void> {
    const team = await this.changeable(actor, teamId, 'updateMembership');
    const users = await this.resolve(usernames);
    for (const u of users) await this.deps.repo.addMember(team.id, u.id, this.deps.clock.now());
    this.deps.tokenCache.clear();
  }

  async removeMembers(actor: Actor, teamId: string, usernames: string[]): Promise<void> {
    const team = await this.changeable(actor, teamId, 'updateMembership');
    const users = await this.resolve(usernames);
    for (const u of users) await this.deps.repo.removeMember(team.id, u.id);
    // Membership decides workspace permissions, which are cached alongside the tokens.
    this.deps.tokenCache.clear();
  }

  private async resolve(usernames: string[]): Promise<User[]> {
    const out: User[] = [];
    for (const [i, name] of usernames.entries()) {
      const u = await this.deps.repo.userByName(name);
      if (!u) throw invalid(`user "${name}" not found`, `/data/${i}/id`);
      out.push(u);
    }
    return out;
  }
}
