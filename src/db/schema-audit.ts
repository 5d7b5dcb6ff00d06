/** Audit devices (shared by every node) and the state service's audit trail. */
export interface AuditTables {
  audit_devices: AuditDevicesTable;
  tfe_audit_events: TfeAuditEventsTable;
}

export interface AuditDevicesTable {
  path: string;
  type: string;
  description: string;
  /** The options as given, a JSON object of strings. */
  options: string;
  local: number;
  /** The HMAC salt, sealed by the secret box. */
  salt: string;
  created_at: string;
}

export interface TfeAuditEventsTable {
  id: string;
  timestamp: string;
  organization_id: string;
  organization: string;
  workspace_id: string | null;
  actor_type: string;
  actor_id: string;
  actor_description: string;
  token_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  outcome: string;
  status: number;
  source_ip: string;
  request_id: string;
}
