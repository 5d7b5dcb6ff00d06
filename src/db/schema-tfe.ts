/** Tables of the Terraform state service (filled in by its migrations). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface TfeTables {}
