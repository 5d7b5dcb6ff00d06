import { BlockList, isIP } from 'node:net';

/**
 * CIDR lists as Vault takes them (`secret_id_bound_cidrs`, `token_bound_cidrs`): each entry
 * is an address block or a bare address. Checked with node:net's BlockList.
 */
export interface CidrList {
  readonly entries: readonly string[];
  allows(ip: string): boolean;
}

/** Parses the entries; returns the first bad entry as `error` instead of throwing. */
export function parseCidrList(entries: readonly string[]): CidrList | { error: string } {
  const list = new BlockList();
  for (const raw of entries) {
    const entry = raw.trim();
    const [addr = '', prefixText] = entry.split('/');
    const family = isIP(addr);
    if (family === 0) return { error: entry };
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (prefixText === undefined) {
      list.addAddress(addr, type);
      continue;
    }
    const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : -1;
    if (prefix < 0 || prefix > (family === 6 ? 128 : 32)) return { error: entry };
    list.addSubnet(addr, prefix, type);
  }
  const clean = entries.map((e) => e.trim());
  return {
    entries: clean,
    allows(ip: string): boolean {
      if (clean.length === 0) return true;
      const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
      const addr = v4 ?? ip;
      const family = isIP(addr);
      if (family === 0) return false;
      return list.check(addr, family === 6 ? 'ipv6' : 'ipv4');
    },
  };
}

/** True when `ip` is inside one of `entries` (always true for an empty list or an unparsable one never stored). */
export function cidrsAllow(entries: readonly string[] | null | undefined, ip: string): boolean {
  if (!entries || entries.length === 0) return true;
  const parsed = parseCidrList(entries);
  return 'error' in parsed ? false : parsed.allows(ip);
}
