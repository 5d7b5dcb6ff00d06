/** Tables of the PKI engine: mounts, tokens, policies, leases (filled in by its migrations). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface PkiTables {}
