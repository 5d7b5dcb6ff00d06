import type { Kysely, Selectable, Updateable } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import type { Database } from '../../db/schema.js';
import type { OrganizationsTable } from '../../db/schema-tfe.js';
import { invalid } from '../../shared/errors.js';
import type { PageRequest } from '../pagination.js';
import { pageOffset } from '../pagination.js';
import type { Organization } from './organization.js';

function toOrganization(r: Selectable<OrganizationsTable>): Organization {
  return {
    id: r.id,
    name: r.name,
    email: r.email,
    sessionTimeout: r.session_timeout,
    sessionRemember: r.session_remember,
    collaboratorAuthPolicy: r.collaborator_auth_policy === 'two_factor_mandatory' ? 'two_factor_mandatory' : 'password',
    costEstimationEnabled: r.cost_estimation_enabled === 1,
    allowForceDeleteWorkspaces: r.allow_force_delete_workspaces === 1,
    // Set for every organization by migration 0015 and at creation.
    defaultProjectId: r.default_project_id ?? '',
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

function nameTaken(err: unknown, name: string | undefined): unknown {
  return isUniqueViolation(err, 'organizations_name_key')
    ? invalid(`organization name "${name}" is already taken`, '/data/attributes/name')
    : err;
}

export class OrganizationRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async insert(o: Organization, ex: Kysely<Database> = this.deps.db): Promise<void> {
    try {
      await ex
        .insertInto('organizations')
        .values({
          id: o.id,
          name: o.name,
          email: o.email,
          session_timeout: o.sessionTimeout,
          session_remember: o.sessionRemember,
          collaborator_auth_policy: o.collaboratorAuthPolicy,
          cost_estimation_enabled: o.costEstimationEnabled ? 1 : 0,
          allow_force_delete_workspaces: o.allowForceDeleteWorkspaces ? 1 : 0,
          default_project_id: o.defaultProjectId,
          created_at: o.createdAt.toISOString(),
          updated_at: o.updatedAt.toISOString(),
        })
        .execute();
    } catch (err) {
      throw nameTaken(err, o.name);
    }
  }

  async byName(name: string): Promise<Organization | undefined> {
    const r = await this.deps.db.selectFrom('organizations').selectAll().where('name', '=', name).executeTakeFirst();
    return r && toOrganization(r);
  }

  async byId(id: string): Promise<Organization | undefined> {
    const r = await this.deps.db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
    return r && toOrganization(r);
  }

  /** A page of organizations ordered by name; `ids` limits it to those (undefined = all). */
  async page(ids: string[] | undefined, page: PageRequest): Promise<{ items: Organization[]; total: number }> {
    if (ids && ids.length === 0) return { items: [], total: 0 };
    let q = this.deps.db.selectFrom('organizations');
    if (ids) q = q.where('id', 'in', ids);
    const total = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const rows = await q.selectAll().orderBy('name').limit(page.size).offset(pageOffset(page)).execute();
    return { items: rows.map(toOrganization), total: Number(total.n) };
  }

  async update(id: string, patch: Partial<Organization>, updatedAt: Date): Promise<void> {
    const v: Updateable<OrganizationsTable> = { updated_at: updatedAt.toISOString() };
    if (patch.name !== undefined) v.name = patch.name;
    if (patch.email !== undefined) v.email = patch.email;
    if (patch.sessionTimeout !== undefined) v.session_timeout = patch.sessionTimeout;
    if (patch.sessionRemember !== undefined) v.session_remember = patch.sessionRemember;
    if (patch.collaboratorAuthPolicy !== undefined) v.collaborator_auth_policy = patch.collaboratorAuthPolicy;
    if (patch.costEstimationEnabled !== undefined) v.cost_estimation_enabled = patch.costEstimationEnabled ? 1 : 0;
    if (patch.allowForceDeleteWorkspaces !== undefined)
      v.allow_force_delete_workspaces = patch.allowForceDeleteWorkspaces ? 1 : 0;
    try {
      await this.deps.db.updateTable('organizations').set(v).where('id', '=', id).execute();
    } catch (err) {
      throw nameTaken(err, patch.name);
    }
  }

  async delete(id: string, ex: Kysely<Database> = this.deps.db): Promise<boolean> {
    const res = await ex.deleteFrom('organizations').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
