/** Tables of the state versions module (filled in by its migrations). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface TfeStateTables {}
