/**
 * The acting principal of every TFE service method, resolved from the bearer token by
 * the auth hook (see request-actor.ts). HCP Terraform has three token kinds — user,
 * team and organization — and they are allowed different things (reference 8.3), so
 * the kind is part of the actor rather than a detail of the token.
 */
export type Actor = UserActor | TeamActor | OrganizationActor;

export interface UserActor {
  kind: 'user';
  userId: string;
  username: string;
  /** Site admins (the initial admin token) may do anything, including create organizations. */
  siteAdmin: boolean;
  /** The `at-…` token used, or null for the initial admin token. */
  tokenId: string | null;
}

export interface TeamActor {
  kind: 'team';
  teamId: string;
  teamName: string;
  /** Organization name (organizations are addressed by name). */
  organization: string;
  /** Organization external id (`org-…`); stable across renames. */
  organizationId: string;
  tokenId: string;
}

export interface OrganizationActor {
  kind: 'organization';
  organization: string;
  organizationId: string;
  tokenId: string;
}

/**
 * Everything about an actor that workspace permissions depend on, as one string: the
 * key of cached permission answers (a user's site-admin flag is part of it).
 */
export function actorAccessKey(actor: Actor): string {
  switch (actor.kind) {
    case 'user':
      return actor.siteAdmin ? `user:${actor.userId}:admin` : `user:${actor.userId}`;
    case 'team':
      return `team:${actor.teamId}:${actor.organizationId}`;
    case 'organization':
      return `organization:${actor.organizationId}`;
  }
}

/** A short stable label for logs (`user:user-…`, `team:team-…`, `organization:org-…`). */
export function actorLabel(actor: Actor): string {
  switch (actor.kind) {
    case 'user':
      return `user:${actor.userId}`;
    case 'team':
      return `team:${actor.teamId}`;
    case 'organization':
      return `organization:${actor.organizationId}`;
  }
}
