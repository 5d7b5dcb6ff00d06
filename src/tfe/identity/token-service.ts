import type { Db } from '../../db/database.js';
import type { Clock } from '../../shared/clock.js';
import { forbidden, invalid, notFound } from '../../shared/errors.js';
import { hashToken, tfeId } from '../../shared/ids.js';
import type { OrganizationService } from '../organizations/organization-service.js';
import type { Actor } from './actor.js';
import type { IdentityRepo } from './identity-repo.js';
import type { AuthToken, CreatedToken, Team } from './identity.js';
import { generateTokenSecret } from './identity.js';
import { teamPermissions } from './permissions.js';
import type { TokenActorCache } from './token-actor-cache.js';

export interface TokenInput {
  description?: string | null;
  expiredAt?: Date | null;
}

/**
 * User, team and organization API tokens (reference 8.3). Only the SHA-256 of a token
 * is stored; the text is returned once, by create. User tokens are managed only by their
 * user (or a site admin); team tokens by whoever manages the organization's teams (the
 * owners team's only by owners); the organization token by owners and by the
 * organization token itself.
 */
export class TokenService {
  constructor(
    private readonly deps: {
      db: Db;
      repo: IdentityRepo;
      organizations: OrganizationService;
      clock: Clock;
      tokenCache: TokenActorCache;
    },
  ) {}

  private checkExpiry(input: TokenInput): void {
    if (input.expiredAt && input.expiredAt.getTime() <= this.deps.clock.now().getTime()) {
      throw invalid('expired-at must be in the future', '/data/attributes/expired-at');
    }
  }

  private async mint(
    base: Omit<AuthToken, 'id' | 'createdAt' | 'lastUsedAt'>,
    replaceSingleton?: { kind: 'team' | 'organization'; ownerId: string },
  ): Promise<CreatedToken> {
    const secret = generateTokenSecret();
    const token: AuthToken = { ...base, id: tfeId('at'), createdAt: this.deps.clock.now(), lastUsedAt: null };
    // Regenerating a singleton token revokes the old one; a concurrent regeneration gets a conflict.
    await this.deps.db.units.readWrite(async (trx) => {
      if (replaceSingleton)
        await this.deps.repo.deleteSingletonTokens(replaceSingleton.kind, replaceSingleton.ownerId, trx);
      await this.deps.repo.insertToken(token, hashToken(secret), trx);
    });
    // Revocation must show at once on this node (other nodes: within the cache TTL).
    if (replaceSingleton) this.deps.tokenCache.clear();
    return { token, secret };
  }

  private assertSelfOrSiteAdmin(actor: Actor, userId: string): void {
    if (actor.kind !== 'user') throw forbidden('user tokens can only be managed with a user token');
    if (!actor.siteAdmin && actor.userId !== userId) throw notFound('user not found');
  }

  // ---- user tokens

  async createUserToken(actor: Actor, userId: string, input: TokenInput): Promise<CreatedToken> {
    this.assertSelfOrSiteAdmin(actor, userId);
    if (!(await this.deps.repo.userById(userId))) throw notFound('user not found');
    this.checkExpiry(input);
    return this.mint({
      kind: 'user',
      userId,
      teamId: null,
      organizationId: null,
      singleton: false,
      description: input.description ?? null,
      createdById: actor.kind === 'user' ? actor.userId : null,
      expiredAt: input.expiredAt ?? null,
    });
  }

  async listUserTokens(actor: Actor, userId: string): Promise<AuthToken[]> {
    this.assertSelfOrSiteAdmin(actor, userId);
    if (!(await this.deps.repo.userById(userId))) throw notFound('user not found');
    return this.deps.repo.tokensOfUser(userId);
  }

  /** Any token by id, if the actor may manage it; otherwise not_found. */
  async getToken(actor: Actor, tokenId: string): Promise<AuthToken> {
    const t = await this.deps.repo.tokenById(tokenId);
    if (!t || !(await this.mayManage(actor, t))) throw notFound('authentication token not found');
    return t;
  }

  async deleteToken(actor: Actor, tokenId: string): Promise<void> {
    const t = await this.getToken(actor, tokenId);
    await this.deps.repo.deleteToken(t.id);
    this.deps.tokenCache.clear();
  }

  private async mayManage(actor: Actor, t: AuthToken): Promise<boolean> {
    if (t.kind === 'user') return actor.kind === 'user' && (actor.siteAdmin || actor.userId === t.userId);
    if (t.kind === 'team') {
      const team = t.teamId ? await this.deps.repo.teamById(t.teamId) : undefined;
      return team !== undefined && (await this.canManageTeamTokens(actor, team));
    }
    const org = t.organizationId ? await this.deps.repo.organizationName(t.organizationId) : undefined;
    if (org === undefined) return false;
    return this.deps.organizations.authorize(actor, org, 'manageOrganizationToken').then(
      () => true,
      () => false,
    );
  }

  // ---- team tokens (the legacy one-per-team token)

  private async teamFor(actor: Actor, teamId: string): Promise<Team> {
    const team = await this.deps.repo.teamById(teamId);
    if (!team || !(await this.canManageTeamTokens(actor, team))) throw notFound('team not found');
    return team;
  }

  /** Team tokens follow the team rules: the owners team's only by owners (teamPermissions). */
  private async canManageTeamTokens(actor: Actor, team: Team): Promise<boolean> {
    return this.deps.organizations.authorize(actor, team.organization).then(
      (view) => teamPermissions(view.permissions, team).updateApiToken,
      () => false,
    );
  }

  async createTeamToken(actor: Actor, teamId: string, input: TokenInput): Promise<CreatedToken> {
    const team = await this.teamFor(actor, teamId);
    this.checkExpiry(input);
    return this.mint(
      {
        kind: 'team',
        userId: null,
        teamId: team.id,
        organizationId: null,
        singleton: true,
        description: input.description ?? null,
        createdById: actor.kind === 'user' ? actor.userId : null,
        expiredAt: input.expiredAt ?? null,
      },
      { kind: 'team', ownerId: team.id },
    );
  }

  async getTeamToken(actor: Actor, teamId: string): Promise<AuthToken> {
    const team = await this.teamFor(actor, teamId);
    const t = await this.deps.repo.singletonToken('team', team.id);
    if (!t) throw notFound('team has no authentication token');
    return t;
  }

  async deleteTeamToken(actor: Actor, teamId: string): Promise<void> {
    const team = await this.teamFor(actor, teamId);
    if ((await this.deps.repo.deleteSingletonTokens('team', team.id)) === 0)
      throw notFound('team has no authentication token');
    this.deps.tokenCache.clear();
  }

  /**
   * A team token with a description (`POST /teams/:id/authentication-tokens`): a team
   * may have many, told apart by description, which must be unique within the team.
   */
  async createDescribedTeamToken(actor: Actor, teamId: string, input: TokenInput): Promise<CreatedToken> {
    const team = await this.teamFor(actor, teamId);
    this.checkExpiry(input);
    const description = input.description ?? null;
    if ((await this.deps.repo.teamTokenDescriptions(team.id)).includes(description)) {
      throw invalid('the team already has a token with this description', '/data/attributes/description');
    }
    return this.mint({
      kind: 'team',
      userId: null,
      teamId: team.id,
      organizationId: null,
      singleton: false,
      description,
      createdById: actor.kind === 'user' ? actor.userId : null,
      expiredAt: input.expiredAt ?? null,
    });
  }

  /**
   * Every team token of an organization (`GET /organizations/:org/team-tokens`); those of
   * the owners team only for owners, who alone may manage them.
   */
  async listTeamTokens(actor: Actor, organization: string): Promise<AuthToken[]> {
    const { organization: org, permissions } = await this.deps.organizations.authorize(
      actor,
      organization,
      'manageTeamTokens',
    );
    return this.deps.repo.teamTokensOfOrganization(org.id, { withOwners: permissions.manageOwnersTeam });
  }

  // ---- the organization token

  async createOrganizationToken(actor: Actor, organization: string, input: TokenInput): Promise<CreatedToken> {
    const { organization: org } = await this.deps.organizations.authorize(
      actor,
      organization,
      'manageOrganizationToken',
    );
    this.checkExpiry(input);
    return this.mint(
      {
        kind: 'organization',
        userId: null,
        teamId: null,
        organizationId: org.id,
        singleton: true,
        description: input.description ?? null,
        createdById: actor.kind === 'user' ? actor.userId : null,
        expiredAt: input.expiredAt ?? null,
      },
      { kind: 'organization', ownerId: org.id },
    );
  }

  async getOrganizationToken(actor: Actor, organization: string): Promise<AuthToken> {
    const { organization: org } = await this.deps.organizations.authorize(
      actor,
      organization,
      'manageOrganizationToken',
    );
    const t = await this.deps.repo.singletonToken('organization', org.id);
    if (!t) throw notFound('organization has no authentication token');
    return t;
  }

  async deleteOrganizationToken(actor: Actor, organization: string): Promise<void> {
    const { organization: org } = await this.deps.organizations.authorize(
      actor,
      organization,
      'manageOrganizationToken',
    );
    if ((await this.deps.repo.deleteSingletonTokens('organization', org.id)) === 0)
      throw notFound('organization has no authentication token');
    this.deps.tokenCache.clear();
  }
}
