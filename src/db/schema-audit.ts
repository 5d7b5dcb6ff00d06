/** Audit devices, shared by every node. */
export interface AuditTables {
  audit_devices: AuditDevicesTable;
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
