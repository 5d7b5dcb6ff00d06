/** Tables of PKI keys, issuers, roles and certificates (filled in by their migrations). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface PkiIssuanceTables {}
