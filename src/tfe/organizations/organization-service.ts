import type { Kysely } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { Clock } from '../../shared/clock.js';
import { forbidden, invalid, notFound } from '../../shared/errors.js';
import { tfeId } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import { organizationAccess } from '../identity/permissions.js';
import type { OrganizationAccess, OrganizationFacts } from '../identity/permissions.js';
import type { Page, PageRequest } from '../pagination.js';
import type { OrganizationRepo } from './organization-repo.js';
import { COLLABORATOR_AUTH_POLICIES, entitlementsFor, isValidEmail, isValidOrganizationName } from './organization.js';
import type { Entitlements, Organization, OrganizationInput, OrganizationView } from './organization.js';

/** Runs inside the transaction that deletes an organization, before its rows go. */
export type OrganizationDeleteHook = (executor: Kysely<Database>, organizationId: string) => Promise<void>;

/** Runs inside the transaction that creates an organization, after its row (projects make its default project). */
export type OrganizationCreateHook = (executor: Kysely<Database>, organization: Organization) => Promise<void>;

/**
 * What organizations need to know about actors. IdentityService provides it; it is
 * declared here so this module does not depend on the identity services, which build
 * on organizations (order: organizations, identity, workspaces, state versions).
 */
export interface OrganizationMembership {
  organizationFacts(actor: Actor, organizationId: string): Promise<OrganizationFacts>;
  /** Organization ids the actor belongs to, or 'all' for site admins. */
  memberOrganizationIds(actor: Actor): Promise<string[] | 'all'>;
  /** Creates the owners team of a new organization inside its create transaction. */
  createOwnersTeam(executor: Kysely<Database>, organizationId: string, creator: Actor): Promise<void>;
  /** Drops cached token answers: organization and team tokens name their organization, and deleting it revokes them. */
  forgetTokens(): void;
}

/**
 * Organizations: CRUD, the entitlement set, and organization-level authorization for
 * the modules after this one (`authorize`).
 */
export class OrganizationService {
  private deleteHooks: OrganizationDeleteHook[] = [];
  private createHooks: OrganizationCreateHook[] = [];

  constructor(
    private readonly deps: { db: Db; repo: OrganizationRepo; identity: OrganizationMembership; clock: Clock },
  ) {}

  /** Later modules (workspaces) clean up inside the organization's delete transaction. */
  onDelete(hook: OrganizationDeleteHook): void {
    this.deleteHooks.push(hook);
  }

  /** Later modules (projects) add what every organization has inside its create transaction. */
  onCreate(hook: OrganizationCreateHook): void {
    this.createHooks.push(hook);
  }

  /**
   * The organization and the actor's access to it. Throws not_found when it is missing
   * or when `need` is given and not allowed (or the actor cannot even see it).
   */
  async authorize(actor: Actor, name: string, need?: keyof OrganizationAccess): Promise<OrganizationView> {
    const org = await this.deps.repo.byName(name);
    if (!org) throw notFound(`organization "${name}" not found`);
    const permissions = organizationAccess(await this.deps.identity.organizationFacts(actor, org.id));
    if (!permissions.read) throw notFound(`organization "${name}" not found`);
    if (need && !permissions[need]) throw forbidden(`not allowed to ${need} in organization "${name}"`);
    return { organization: org, permissions };
  }

  async get(actor: Actor, name: string): Promise<OrganizationView> {
    return this.authorize(actor, name);
  }

  async list(actor: Actor, page: PageRequest): Promise<Page<OrganizationView>> {
    const ids = await this.deps.identity.memberOrganizationIds(actor);
    const { items, total } = await this.deps.repo.page(ids === 'all' ? undefined : ids, page);
    const views = await Promise.all(
      items.map(async (organization) => ({
        organization,
        permissions: organizationAccess(await this.deps.identity.organizationFacts(actor, organization.id)),
      })),
    );
    return { items: views, number: page.number, size: page.size, totalCount: total };
  }

  /**
   * Creates an organization with its `owners` team; the creating user becomes an owner.
   * Only users may create organizations (reference 8.3), and on this self-hosted server
   * only site admins.
   */
  async create(actor: Actor, input: OrganizationInput): Promise<OrganizationView> {
    if (!(actor.kind === 'user' && actor.siteAdmin)) throw forbidden('only site admin users can create organizations');
    if (input.name === undefined) throw invalid('name is required', '/data/attributes/name');
    if (input.email === undefined) throw invalid('email is required', '/data/attributes/email');
    validate(input);
    const now = this.deps.clock.now();
    const org: Organization = {
      id: tfeId('org'),
      name: input.name,
      email: input.email,
      sessionTimeout: input.sessionTimeout ?? null,
      sessionRemember: input.sessionRemember ?? null,
      collaboratorAuthPolicy:
        (input.collaboratorAuthPolicy as Organization['collaboratorAuthPolicy'] | undefined) ?? 'password',
      costEstimationEnabled: input.costEstimationEnabled ?? false,
      allowForceDeleteWorkspaces: input.allowForceDeleteWorkspaces ?? false,
      defaultProjectId: tfeId('prj'),
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.db.units.readWrite(async (trx) => {
      await this.deps.repo.insert(org, trx);
      await this.deps.identity.createOwnersTeam(trx, org.id, actor);
      for (const hook of this.createHooks) await hook(trx, org);
    });
    return this.authorize(actor, org.name);
  }

  /** Partial update; a new name becomes the organization's id and path. */
  async update(actor: Actor, name: string, input: OrganizationInput): Promise<OrganizationView> {
    const { organization } = await this.authorize(actor, name, 'update');
    validate(input);
    const patch: Partial<Organization> = {
      name: input.name,
      email: input.email,
      sessionTimeout: input.sessionTimeout,
      sessionRemember: input.sessionRemember,
      collaboratorAuthPolicy: input.collaboratorAuthPolicy as Organization['collaboratorAuthPolicy'] | undefined,
      costEstimationEnabled: input.costEstimationEnabled,
      allowForceDeleteWorkspaces: input.allowForceDeleteWorkspaces,
    };
    if (Object.values(patch).every((v) => v === undefined)) return this.authorize(actor, name);
    await this.deps.repo.update(organization.id, patch, this.deps.clock.now());
    if (patch.name !== undefined) this.deps.identity.forgetTokens();
    return this.authorize(actor, input.name ?? name);
  }

  /** Deletes the organization with its teams, tokens, workspaces and their state. */
  async delete(actor: Actor, name: string): Promise<void> {
    const { organization } = await this.authorize(actor, name, 'destroy');
    await this.deps.db.units.readWrite(async (trx) => {
      for (const hook of this.deleteHooks) await hook(trx, organization.id);
      await this.deps.repo.delete(organization.id, trx);
    });
    this.deps.identity.forgetTokens();
  }

  async entitlements(actor: Actor, name: string): Promise<Entitlements> {
    const { organization } = await this.authorize(actor, name);
    return entitlementsFor(organization);
  }

  /** For the CLI and other services: an organization by name without authorization. */
  async byNameUnchecked(name: string): Promise<Organization | undefined> {
    return this.deps.repo.byName(name);
  }
}

function validate(input: OrganizationInput): void {
  if (input.name !== undefined && !isValidOrganizationName(input.name)) {
    throw invalid('name may contain only letters, digits, "-" and "_"', '/data/attributes/name');
  }
  if (input.email !== undefined && !isValidEmail(input.email))
    throw invalid('email is not a valid email address', '/data/attributes/email');
  for (const [key, field] of [
    ['sessionTimeout', 'session-timeout'],
    ['sessionRemember', 'session-remember'],
  ] as const) {
    const v = input[key];
    if (v !== undefined && v !== null && v < 1)
      throw invalid(`${field} must be a positive number of minutes`, `/data/attributes/${field}`);
  }
  if (
    input.collaboratorAuthPolicy !== undefined &&
    !(COLLABORATOR_AUTH_POLICIES as readonly string[]).includes(input.collaboratorAuthPolicy)
  ) {
    throw invalid(
      'collaborator-auth-policy must be "password" or "two_factor_mandatory"',
      '/data/attributes/collaborator-auth-policy',
    );
  }
}
