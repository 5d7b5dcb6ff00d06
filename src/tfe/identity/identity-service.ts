import type { AdminTokenService } from '../../admin/admin-token-service.js';
import type { Clock } from '../../shared/clock.js';
import { forbidden, invalid, notFound } from '../../shared/errors.js';
import { hashToken, tfeId } from '../../shared/ids.js';
import type { Actor } from './actor.js';
import type { AccessTeam, Executor, IdentityRepo } from './identity-repo.js';
import type { Team, User } from './identity.js';
import type { TokenActorCache } from './token-actor-cache.js';
import {
  SITE_ADMIN_USERNAME,
  isExpired,
  isValidUsername,
  looksLikeApiToken,
  organizationAccessOf,
} from './identity.js';
import type { OrganizationFacts, TeamGrant } from './permissions.js';

/** The caller as `GET /account/details` shows it. Team and organization tokens act as service accounts. */
export interface AccountDetails {
  user: User;
  serviceAccount: boolean;
  /** The token's owner as `authenticated-resource`. */
  authenticatedResource: { type: 'users' | 'teams' | 'organizations'; id: string };
}

/**
 * Users, bearer-token authentication and the facts the permission rules need. Every
 * other TFE service asks this one who an actor is and which teams it acts through.
 */
export class IdentityService {
  constructor(
    private readonly deps: {
      repo: IdentityRepo;
      adminTokens: AdminTokenService;
      clock: Clock;
      tokenCache: TokenActorCache;
    },
  ) {}

  /**
   * The actor of a bearer token, or null for unknown, revoked or expired tokens. Answers
   * come from a short-lived cache (token-actor-cache.ts) that token, team and organization
   * changes on this node clear; other nodes see a revocation within its TTL.
   */
  async authenticate(token: string): Promise<Actor | null> {
    const tokenHash = hashToken(token);
    const cached = this.deps.tokenCache.get(tokenHash);
    if (cached) return cached;
    return this.deps.tokenCache.lookUp(tokenHash, (since) => this.#lookUp(token, tokenHash, since));
  }

  async #lookUp(token: string, tokenHash: string, since: number): Promise<Actor | null> {
    if (looksLikeApiToken(token)) {
      const t = await this.deps.repo.tokenByHash(tokenHash);
      if (!t) return null;
      const now = this.deps.clock.now();
      if (isExpired(t, now)) return null;
      const actor = await this.actorOfToken(t.kind, t.userId ?? t.teamId ?? t.organizationId ?? '', t.id);
      // Record use at most once a minute, and skip the write entirely when it is recent:
      // on SQLite even an UPDATE that matches nothing takes the write lock.
      if (actor && (t.lastUsedAt === null || now.getTime() - t.lastUsedAt.getTime() >= 60_000))
        await this.deps.repo.touchToken(t.id, now);
      if (actor) this.deps.tokenCache.set(tokenHash, actor, since, t.expiredAt);
      return actor;
    }
    if (await this.deps.adminTokens.isAdmin(token)) {
      const admin = await this.siteAdminUser();
      const actor: Actor = { kind: 'user', userId: admin.id, username: admin.username, siteAdmin: true, tokenId: null };
      this.deps.tokenCache.set(tokenHash, actor, since);
      return actor;
    }
    return null;
  }

  /** The actor of a token from the cache alone (see authenticate); undefined on a miss. */
  recentActor(token: string): Actor | undefined {
    return this.deps.tokenCache.get(hashToken(token));
  }

  /** Drops every cached token → actor answer; call after a change that revokes tokens or renames their owners. */
  forgetTokens(): void {
    this.deps.tokenCache.clear();
  }

  /**
   * Calls `listener` after every change made through this node that can take a
   * permission away: tokens, teams, memberships, organizations (whatever clears the
   * token cache). Caches of permission answers forget them then.
   */
  onIdentityChange(listener: () => void): void {
    this.deps.tokenCache.onClear(listener);
  }

  private async actorOfToken(
    kind: 'user' | 'team' | 'organization',
    ownerId: string,
    tokenId: string,
  ): Promise<Actor | null> {
    switch (kind) {
      case 'user': {
        const u = await this.deps.repo.userById(ownerId);
        return u ? { kind: 'user', userId: u.id, username: u.username, siteAdmin: u.siteAdmin, tokenId } : null;
      }
      case 'team': {
        const t = await this.deps.repo.teamById(ownerId);
        return t
          ? {
              kind: 'team',
              teamId: t.id,
              teamName: t.name,
              organization: t.organization,
              organizationId: t.organizationId,
              tokenId,
            }
          : null;
      }
      case 'organization': {
        const name = await this.deps.repo.organizationName(ownerId);
        return name === undefined
          ? null
          : { kind: 'organization', organization: name, organizationId: ownerId, tokenId };
      }
    }
  }

  /** The user the initial admin token acts as, created on first use (safe under races). */
  async siteAdminUser(): Promise<User> {
    const existing = await this.deps.repo.userByName(SITE_ADMIN_USERNAME);
    if (existing) return existing;
    await this.deps.repo.insertUserIfAbsent({
      id: tfeId('user'),
      username: SITE_ADMIN_USERNAME,
      email: 'site-admin@localhost',
      siteAdmin: true,
      createdAt: this.deps.clock.now(),
    });
    const created = await this.deps.repo.userByName(SITE_ADMIN_USERNAME);
    if (!created) throw new Error('site admin user vanished after insert');
    return created;
  }

  /** Creates a user. Only site admins may (there is no self sign-up). */
  async createUser(actor: Actor, input: { username: string; email?: string; siteAdmin?: boolean }): Promise<User> {
    if (!(actor.kind === 'user' && actor.siteAdmin)) throw forbidden('only site admins can create users');
    if (!isValidUsername(input.username))
      throw invalid('username may contain letters, digits, "-", "_" and "."', '/data/attributes/username');
    const user: User = {
      id: tfeId('user'),
      username: input.username,
      email: input.email ?? `${input.username}@localhost`,
      siteAdmin: input.siteAdmin ?? false,
      createdAt: this.deps.clock.now(),
    };
    await this.deps.repo.insertUser(user);
    return user;
  }

  async listUsers(actor: Actor): Promise<User[]> {
    if (!(actor.kind === 'user' && actor.siteAdmin)) throw forbidden('only site admins can list users');
    return this.deps.repo.listUsers();
  }

  /** A user by id, for any authenticated caller (HCP shows a public subset of every user). */
  async getUser(_actor: Actor, id: string): Promise<User> {
    const u = await this.deps.repo.userById(id);
    if (!u) throw notFound('user not found');
    return u;
  }

  async userByName(_actor: Actor, username: string): Promise<User> {
    const u = await this.deps.repo.userByName(username);
    if (!u) throw notFound(`user "${username}" not found`);
    return u;
  }

  async accountDetails(actor: Actor): Promise<AccountDetails> {
    const now = this.deps.clock.now();
    switch (actor.kind) {
      case 'user': {
        const user = await this.deps.repo.userById(actor.userId);
        if (!user) throw notFound('user not found');
        return { user, serviceAccount: false, authenticatedResource: { type: 'users', id: user.id } };
      }
      case 'team':
        return {
          user: { id: actor.teamId, username: `api-${actor.teamId}`, email: '', siteAdmin: false, createdAt: now },
          serviceAccount: true,
          authenticatedResource: { type: 'teams', id: actor.teamId },
        };
      case 'organization':
        return {
          user: {
            id: actor.organizationId,
            username: `api-${actor.organizationId}`,
            email: '',
            siteAdmin: false,
            createdAt: now,
          },
          serviceAccount: true,
          authenticatedResource: { type: 'organizations', id: actor.organization },
        };
    }
  }

  /** Teams of the organization the actor acts through: its memberships, or its own team. */
  async teamsOf(actor: Actor, organizationId: string): Promise<AccessTeam[]> {
    const by = this.teamsBy(actor, organizationId);
    return by ? this.deps.repo.accessTeams(organizationId, by) : [];
  }

  /** Whose teams count in the organization: a user's, a team token's own team there, or none. */
  private teamsBy(actor: Actor, organizationId: string): { userId: string } | { teamId: string } | undefined {
    if (actor.kind === 'user') return { userId: actor.userId };
    if (actor.kind === 'team' && actor.organizationId === organizationId) return { teamId: actor.teamId };
    return undefined;
  }

  async organizationFacts(actor: Actor, organizationId: string): Promise<OrganizationFacts> {
    return this.factsFrom(actor, organizationId, await this.teamsOf(actor, organizationId));
  }

  /** Organization facts and the grants on the given workspaces, from one lookup of the actor's teams. */
  async accessFacts(
    actor: Actor,
    organizationId: string,
    workspaceIds: string[],
  ): Promise<{ facts: OrganizationFacts; grants: Map<string, TeamGrant[]> }> {
    const by = this.teamsBy(actor, organizationId);
    if (!by) return { facts: this.factsFrom(actor, organizationId, []), grants: new Map() };
    const { teams, grants } = await this.deps.repo.accessTeamsWithGrants(organizationId, by, workspaceIds);
    return { facts: this.factsFrom(actor, organizationId, teams), grants };
  }

  private factsFrom(actor: Actor, organizationId: string, teams: AccessTeam[]): OrganizationFacts {
    return {
      siteAdmin: actor.kind === 'user' && actor.siteAdmin,
      isUser: actor.kind === 'user',
      organizationToken: actor.kind === 'organization' && actor.organizationId === organizationId,
      owner: teams.some((t) => t.isOwners),
      member: teams.length > 0,
      manageWorkspaces: teams.some((t) => t.manageWorkspaces),
      readWorkspaces: teams.some((t) => t.readWorkspaces),
      manageProjects: teams.some((t) => t.manageProjects),
      readProjects: teams.some((t) => t.readProjects),
    };
  }

  /** Team grants of the actor on the given workspaces of one organization. */
  async grants(actor: Actor, organizationId: string, workspaceIds: string[]): Promise<Map<string, TeamGrant[]>> {
    const teams = await this.teamsOf(actor, organizationId);
    return this.deps.repo.grantsOf(
      teams.map((t) => t.id),
      workspaceIds,
    );
  }

  /** Organization ids where a user is in some team (for listing organizations). */
  async memberOrganizationIds(actor: Actor): Promise<string[] | 'all'> {
    if (actor.kind === 'user') return actor.siteAdmin ? 'all' : this.deps.repo.organizationIdsOfUser(actor.userId);
    return [actor.organizationId];
  }

  /**
   * Creates the `owners` team of a new organization and adds the creating user to it,
   * inside the organization's create transaction.
   */
  async createOwnersTeam(ex: Executor, organizationId: string, creator: Actor): Promise<void> {
    const now = this.deps.clock.now();
    const team: Team = {
      id: tfeId('team'),
      organizationId,
      organization: '',
      name: 'owners',
      visibility: 'organization',
      isOwners: true,
      organizationAccess: organizationAccessOf(true),
      usersCount: 0,
      createdAt: now,
    };
    await this.deps.repo.insertTeam(team, ex);
    if (creator.kind === 'user') await this.deps.repo.addMember(team.id, creator.userId, now, ex);
  }
}
