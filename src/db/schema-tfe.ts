/** Tables of the Terraform state service's identity, organization and workspace layer. */
export interface TfeTables {
  tfe_users: TfeUsersTable;
  tfe_login_codes: TfeLoginCodesTable;
  organizations: OrganizationsTable;
  tfe_teams: TfeTeamsTable;
  tfe_team_members: TfeTeamMembersTable;
  workspaces: WorkspacesTable;
  tfe_team_workspaces: TfeTeamWorkspacesTable;
  tfe_tokens: TfeTokensTable;
  tfe_projects: TfeProjectsTable;
}

export interface TfeUsersTable {
  id: string;
  username: string;
  email: string;
  site_admin: number;
  created_at: string;
}

export interface OrganizationsTable {
  /** External id `org-…`; the API addresses organizations by `name`. */
  id: string;
  name: string;
  email: string;
  session_timeout: number | null;
  session_remember: number | null;
  collaborator_auth_policy: string;
  cost_estimation_enabled: number;
  allow_force_delete_workspaces: number;
  created_at: string;
  updated_at: string;
  /** The project new workspaces go to (migration 0015); set for every organization. */
  default_project_id: string | null;
}

export interface TfeTeamsTable {
  id: string;
  organization_id: string;
  name: string;
  visibility: string;
  is_owners: number;
  manage_workspaces: number;
  read_workspaces: number;
  created_at: string;
  manage_projects: number;
  read_projects: number;
  /** JSON object: the documented organization-access flags that have no column of their own. */
  organization_access: string;
}

export interface TfeTeamMembersTable {
  team_id: string;
  user_id: string;
  created_at: string;
}

export interface WorkspacesTable {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  execution_mode: string;
  terraform_version: string;
  auto_apply: number;
  allow_destroy_plan: number;
  file_triggers_enabled: number;
  queue_all_runs: number;
  speculative_enabled: number;
  global_remote_state: number;
  assessments_enabled: number;
  working_directory: string;
  /** JSON array of strings. */
  trigger_prefixes: string;
  /** JSON array of strings. */
  trigger_patterns: string;
  /** JSON array of strings. */
  tag_names: string;
  source_name: string | null;
  source_url: string | null;
  locked_by_kind: string | null;
  locked_by_id: string | null;
  locked_reason: string | null;
  locked_at: string | null;
  created_at: string;
  updated_at: string;
  /** The project the workspace belongs to (migration 0015); set for every workspace. */
  project_id: string | null;
}

export interface TfeTeamWorkspacesTable {
  id: string;
  team_id: string;
  workspace_id: string;
  access: string;
  state_versions: string;
  workspace_locking: number;
  created_at: string;
  runs: string;
  variables: string;
  sentinel_mocks: string;
  run_tasks: number;
}

export interface TfeTokensTable {
  id: string;
  token_hash: string;
  kind: 'user' | 'team' | 'organization';
  user_id: string | null;
  team_id: string | null;
  organization_id: string | null;
  singleton: number;
  description: string | null;
  created_by_id: string | null;
  created_at: string;
  last_used_at: string | null;
  expired_at: string | null;
}

export interface TfeProjectsTable {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  created_at: string;
  updated_at: string;
}

/** `terraform login` codes awaiting exchange (migration 0026). */
export interface TfeLoginCodesTable {
  /** SHA-256 hex of the code; the code itself is never stored. */
  code_hash: string;
  user_id: string;
  username: string;
  client_id: string;
  redirect_uri: string;
  /** PKCE S256 challenge: base64url(SHA-256(verifier)). */
  code_challenge: string;
  created_at: string;
  expires_at: string;
}
