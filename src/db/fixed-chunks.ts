/**
 * Multi-row INSERTs in a few fixed sizes only, so the SQL texts stay few and their
 * prepared statements are reused (see database.ts); 256 rows of 8 columns stay far
 * below SQLite's limit of bound values.
 */
const CHUNK_SIZES = [256, 64, 16, 4, 1];

/** Splits `items` into chunks whose sizes come from CHUNK_SIZES, largest first. */
export function fixedChunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  let i = 0;
  for (const size of CHUNK_SIZES) {
    while (items.length - i >= size) {
      out.push(items.slice(i, i + size));
      i += size;
    }
  }
  return out;
}
