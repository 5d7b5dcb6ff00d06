import type { Clock } from '../../shared/clock.js';
import { invalid, notFound } from '../../shared/errors.js';
import { tfeId } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import type { TeamService } from '../identity/team-service.js';
import type { TeamAccessRepo } from './team-access-repo.js';
import type { TeamAccess, TeamAccessInput } from './team-access.js';
import { resolveTeamAccess } from './team-access.js';
import type { WorkspaceService } from './workspace-service.js';

/** Grants of teams on workspaces. Managing them needs admin access to the workspace. */
export class TeamAccessService {
  constructor(
    private readonly deps: { repo: TeamAccessRepo; workspaces: WorkspaceService; teams: TeamService; clock: Clock },
  ) {}

  async create(actor: Actor, teamId: string, workspaceId: string, input: TeamAccessInput): Promise<TeamAccess> {
    const ws = await this.deps.workspaces.authorize(actor, workspaceId, 'admin');
    const team = await this.deps.teams.get(actor, teamId).catch(() => undefined);
    if (!team || team.organizationId !== ws.organizationId)
      throw invalid("team not found in the workspace's organization", '/data/relationships/team/data/id');
    const grant: TeamAccess = {
      id: tfeId('tws'),
      teamId: team.id,
      workspaceId: ws.id,
      ...resolveTeamAccess(input),
      createdAt: this.deps.clock.now(),
    };
    await this.deps.repo.insert(grant);
    this.deps.workspaces.forgetAccess();
    return grant;
  }

  async listForWorkspace(actor: Actor, workspaceId: string): Promise<TeamAccess[]> {
    const ws = await this.deps.workspaces.authorize(actor, workspaceId, 'admin');
    return this.deps.repo.ofWorkspace(ws.id);
  }

  async get(actor: Actor, id: string): Promise<TeamAccess> {
    const grant = await this.deps.repo.byId(id);
    if (!grant) throw notFound('team access not found');
    await this.deps.workspaces.authorize(actor, grant.workspaceId, 'admin').catch(() => {
      throw notFound('team access not found');
    });
    return grant;
  }

  async update(actor: Actor, id: string, input: TeamAccessInput): Promise<TeamAccess> {
    const grant = await this.get(actor, id);
    const next = resolveTeamAccess(input, grant);
    await this.deps.repo.update(grant.id, next);
    this.deps.workspaces.forgetAccess();
    return { ...grant, ...next };
  }

  async delete(actor: Actor, id: string): Promise<void> {
    const grant = await this.get(actor, id);
    await this.deps.repo.delete(grant.id);
    this.deps.workspaces.forgetAccess();
  }
}
