/**
 * PKI keys (multi-issuer model): private keys owned by a mount, each with a UUID and an
 * optional unique name. https://developer.hashicorp.com/vault/api-docs/secret/pki#list-keys
 */
import { invalid } from '../../shared/errors.js';

/** Key algorithms of the engine (reference 16.10). */
export type KeyType = 'rsa' | 'ec' | 'ed25519';

export interface PkiKey {
  id: string;
  mountId: string;
  /** '' when unnamed. */
  name: string;
  type: KeyType;
  /** RSA modulus or EC curve bits; 0 for Ed25519. */
  bits: number;
  /** SHA-256 hex of the SubjectPublicKeyInfo. */
  publicKeySha256: string;
  /** Lowercase hex SHA-1 of the public key bits (RFC 5280 method 1). */
  subjectKeyId: string;
  createdAt: Date;
}

const NAME = /^\w([\w.-]*\w)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (s: string): boolean => UUID.test(s);

/**
 * Issuer and key names: `^\w([\w.-]*\w)?$`, never the reserved `default`; '' means unnamed.
 */
export function validateObjectName(kind: 'issuer' | 'key', name: string): void {
  if (name === '') return;
  if (name === 'default') throw invalid(`reserved keyword 'default' can not be used as ${kind} name`, `${kind}_name`);
  if (!NAME.test(name)) throw invalid(`${kind} name contained invalid characters`, `${kind}_name`);
}

/** Colon-separated lowercase hex, as Vault shows key identifiers. */
export function colonHex(hex: string): string {
  return hex.replace(/(..)(?!$)/g, '$1:');
}

export interface RefLookups<T> {
  /** The configured default's id, or '' when none. */
  defaultId(): Promise<string>;
  byId(id: string): Promise<T | undefined>;
  byName(name: string): Promise<T | undefined>;
}

/**
 * The one `default | id | name` resolution of issuer and key references: the literal
 * `default` is the configured default; a UUID that exists wins over a name; else a name.
 */
export async function resolveRef<T>(
  kind: 'issuer' | 'key',
  ref: string,
  lookups: RefLookups<T>,
): Promise<T | undefined> {
  const r = ref.trim();
  if (r === '') throw invalid(`missing ${kind} reference`);
  if (r === 'default') {
    const id = await lookups.defaultId();
    if (id === '') throw invalid(`no default ${kind} currently configured`);
    return lookups.byId(id);
  }
  if (isUuid(r)) {
    const found = await lookups.byId(r.toLowerCase());
    if (found) return found;
  }
  return lookups.byName(r);
}

export function refNotFound(kind: 'issuer' | 'key', ref: string): Error {
  return invalid(`unable to find PKI ${kind} for reference: ${ref}`);
}
