import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { Attr, Document, JsonApiBody, ListDocument, Resource } from '../jsonapi-schemas.js';
import type { ProjectView } from './project.js';

/** The body of POST /organizations/:org/projects and PATCH /projects/:id; the type is required. */
export const ProjectBody = JsonApiBody({
  types: ['projects'],
  requireType: true,
  attributes: { name: Attr.string(), description: Attr.string('null clears it') },
});
export type ProjectBody = Static<typeof ProjectBody>;

const Project = Resource(
  'projects',
  {
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    'created-at': Type.String({ format: 'date-time' }),
    'workspace-count': Type.Integer(),
    permissions: Type.Record(Type.String(), Type.Boolean()),
  },
  'Project',
);
export const ProjectDocument = Document(Project, 'ProjectDocument');
export const ProjectListDocument = ListDocument(Project, 'ProjectListDocument');

/**
 * Project documents as HCP Terraform shows them
 * (https://developer.hashicorp.com/terraform/cloud-docs/api-docs/projects). Workspaces run
 * locally here, so the default execution mode is `local`; no tags, agent pools or team
 * access exist, so those relationships are empty.
 */
export function projectResource(view: ProjectView): Record<string, unknown> {
  const p = view.project;
  const perm = view.permissions;
  const self = `/api/v2/projects/${p.id}`;
  return {
    id: p.id,
    type: 'projects',
    attributes: {
      name: p.name,
      description: p.description,
      'is-unified': false,
      'created-at': p.createdAt.toISOString(),
      'workspace-count': p.workspaceCount,
      'team-count': 0,
      'stack-count': 0,
      'default-execution-mode': 'local',
      'setting-overwrites': { 'execution-mode': false, 'agent-pool': false },
      permissions: {
        'can-read': perm.canRead,
        'can-update': perm.canUpdate,
        'can-destroy': perm.canDestroy,
        'can-create-workspace': perm.canCreateWorkspace,
        'can-move-workspace': perm.canMoveWorkspace,
        'can-move-stack': false,
        'can-deploy-no-code-modules': false,
        'can-read-teams': false,
        'can-manage-tags': perm.canUpdate,
        'can-manage-teams': false,
        'can-manage-in-hcp': false,
        'can-manage-varsets': false,
      },
    },
    relationships: {
      organization: {
        data: { id: p.organization, type: 'organizations' },
        links: { related: `/api/v2/organizations/${encodeURIComponent(p.organization)}` },
      },
      'default-agent-pool': { data: null },
      'tag-bindings': { links: { related: `${self}/tag-bindings` } },
      'effective-tag-bindings': { links: { related: `${self}/effective-tag-bindings` } },
    },
    links: { self },
  };
}
