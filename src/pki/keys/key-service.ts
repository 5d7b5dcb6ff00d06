import { createHash } from 'node:crypto';
import { createPrivateKey, generateKeyPair } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import type { SecretBox } from '../../secrets/secret-box.js';
import type { Clock } from '../../shared/clock.js';
import { invalid, notFound } from '../../shared/errors.js';
import { uuid } from '../../shared/ids.js';
import {
  curveForBits,
  describeKey,
  exportPrivateKeyDer,
  parsePrivateKey,
  resolveKeyParams,
  spkiDer,
  subjectKeyIdFromSpki,
} from '../crypto/keys.js';
import { pemDecodeAll, pemEncode } from '../crypto/pem.js';
import type { Executor, MountConfigService } from '../config/mount-config-service.js';
import { BoundedCache } from './bounded-cache.js';
import { refNotFound, resolveRef, validateObjectName } from './key.js';
import type { KeyType, PkiKey } from './key.js';
import type { KeyRepo } from './key-repo.js';

const sha256Hex = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const generateKeyPairAsync = promisify(generateKeyPair);

/**
 * A CA key, generated off the event loop. The KeyObject is re-imported from its PKCS#8
 * DER so that it does not share state with the generation job (reading key details of a
 * freshly generated KeyObject while that job is finalised can block the thread on Node 20).
 */
async function generatePrivateKey(type: KeyType, bits: number): Promise<KeyObject> {
  const enc = {
    privateKeyEncoding: { type: 'pkcs8', format: 'der' },
    publicKeyEncoding: { type: 'spki', format: 'der' },
  } as const;
  const pair =
    type === 'rsa'
      ? await generateKeyPairAsync('rsa', { modulusLength: bits, publicExponent: 0x10001, ...enc })
      : type === 'ec'
        ? await generateKeyPairAsync('ec', { namedCurve: curveForBits(bits), ...enc })
        : await generateKeyPairAsync('ed25519', enc);
  // promisify() keeps only the KeyObject overload in its types; with DER encodings the value is a Buffer.
  return createPrivateKey({ key: pair.privateKey as unknown as Buffer, format: 'der', type: 'pkcs8' });
}

/** A private key ready to be stored: its record and the KeyObject. */
export interface PreparedKey {
  key: PkiKey;
  privateKey: KeyObject;
}

/**
 * Keys of a PKI mount. Private keys are sealed at rest with the SecretBox (context
 * `pki-key:<id>`) and never leave the service except once, at generation with `exported`.
 */
export class KeyService {
  readonly #repo: KeyRepo;
  readonly #config: MountConfigService;
  readonly #secrets: SecretBox;
  readonly #clock: Clock;
  readonly #cache = new BoundedCache<KeyObject>(512);

  constructor(deps: { repo: KeyRepo; config: MountConfigService; secrets: SecretBox; clock: Clock }) {
    this.#repo = deps.repo;
    this.#config = deps.config;
    this.#secrets = deps.secrets;
    this.#clock = deps.clock;
  }

  /**
   * Generates key material outside any transaction (RSA takes a while). Validates
   * `key_type`/`key_bits` the way Vault does; Ed25519 bits are stored as 0.
   */
  async prepareGenerated(
    mountId: string,
    opts: { keyType: string; keyBits: number; keyName: string },
  ): Promise<PreparedKey> {
    validateObjectName('key', opts.keyName);
    const params = resolveKeyParams(opts.keyType, opts.keyBits);
    const privateKey = await generatePrivateKey(params.type as KeyType, params.bits);
    return { key: this.#describe(mountId, privateKey, opts.keyName), privateKey };
  }

  /** Wraps an already parsed private key (imports). */
  prepareExisting(mountId: string, privateKey: KeyObject, keyName: string): PreparedKey {
    validateObjectName('key', keyName);
    return { key: this.#describe(mountId, privateKey, keyName), privateKey };
  }

  #describe(mountId: string, privateKey: KeyObject, name: string): PkiKey {
    const d = describeKey(privateKey);
    const spki = spkiDer(privateKey);
    return {
      id: uuid(),
      mountId,
      name,
      type: d.type,
      bits: d.bits,
      publicKeySha256: sha256Hex(spki),
      subjectKeyId: subjectKeyIdFromSpki(spki).toString('hex'),
      createdAt: this.#clock.now(),
    };
  }

  /**
   * Stores a prepared key in the caller's transaction and links keyless issuers with the
   * same public key; the first key of a mount becomes the default key.
   */
  async insert(tx: Executor, prepared: PreparedKey): Promise<{ becameDefault: boolean }> {
    const { key, privateKey } = prepared;
    const { label, der } = exportPrivateKeyDer(privateKey, false);
    const sealed = this.#secrets.seal(pemEncode(label, der), `pki-key:${key.id}`);
    await this.#repo.insert(tx, { key, sealedPrivateKey: sealed });
    // An issuer imported before its key starts using the key now.
    await this.#repo.linkIssuers(tx, key.mountId, key.id, key.publicKeySha256);
    const becameDefault = await this.#config.setDefaultKeyIfUnset(tx, key.mountId, key.id);
    return { becameDefault };
  }

  /** Generates and stores a key (keys/generate/:type). */
  async generate(mountId: string, opts: { keyType: string; keyBits: number; keyName: string }): Promise<PreparedKey> {
    const prepared = await this.prepareGenerated(mountId, opts);
    await this.#config.transaction((tx) => this.insert(tx, prepared));
    return prepared;
  }

  /**
   * Imports one unencrypted private key (keys/import). An already present key is not
   * created twice: the existing record is returned with `existing: true`.
   */
  async importKey(mountId: string, pemBundle: string, keyName: string): Promise<{ key: PkiKey; existing: boolean }> {
    validateObjectName('key', keyName);
    const blocks = pemDecodeAll(pemBundle);
    const keyBlocks = blocks.filter((b) => b.label.endsWith('PRIVATE KEY'));
    if (keyBlocks.length !== 1) throw invalid('pem_bundle must contain exactly one unencrypted private key');
    if (keyBlocks[0]!.label === 'ENCRYPTED PRIVATE KEY') throw invalid('encrypted private keys are not supported');
    const { key: privateKey } = parsePrivateKey(pemEncode(keyBlocks[0]!.label, keyBlocks[0]!.der));
    const prepared = this.prepareExisting(mountId, privateKey, keyName);
    return this.#config.transaction(async (tx) => {
      const found = await this.#repo.byPublicKey(tx, mountId, prepared.key.publicKeySha256);
      if (found) return { key: found, existing: true };
      await this.insert(tx, prepared);
      return { key: prepared.key, existing: false };
    });
  }

  async list(mountId: string): Promise<PkiKey[]> {
    return this.#repo.list(this.#repo.executor, mountId);
  }

  /** Resolves `default`, an id or a name; undefined when nothing matches. */
  async find(mountId: string, ref: string, ex: Executor = this.#repo.executor): Promise<PkiKey | undefined> {
    return resolveRef('key', ref, {
      defaultId: async () => (await this.#config.getDefaults(mountId, ex)).defaultKeyId,
      byId: (id) => this.#repo.byId(ex, mountId, id),
      byName: (name) => this.#repo.byName(ex, mountId, name),
    });
  }

  /** Like find() but an unknown reference is a 400 as in Vault. */
  async resolve(mountId: string, ref: string, ex: Executor = this.#repo.executor): Promise<PkiKey> {
    const key = await this.find(mountId, ref, ex);
    if (!key) throw refNotFound('key', ref);
    return key;
  }

  async byId(mountId: string, id: string, ex: Executor = this.#repo.executor): Promise<PkiKey | undefined> {
    return this.#repo.byId(ex, mountId, id);
  }

  async byPublicKey(
    mountId: string,
    publicKeySha256: string,
    ex: Executor = this.#repo.executor,
  ): Promise<PkiKey | undefined> {
    return this.#repo.byPublicKey(ex, mountId, publicKeySha256);
  }

  async rename(mountId: string, ref: string, name: string): Promise<PkiKey> {
    validateObjectName('key', name);
    return this.#config.transaction(async (tx) => {
      const key = await this.resolve(mountId, ref, tx);
      if (key.name !== name) await this.#repo.rename(tx, mountId, key.id, name);
      return { ...key, name };
    });
  }

  /**
   * Deletes a key unless an issuer uses it. Unknown references are a no-op. Returns
   * whether the deleted key was the default key (Vault then warns).
   */
  async delete(mountId: string, ref: string): Promise<{ deleted: boolean; wasDefault: boolean }> {
    const out = await this.#config.transaction(async (tx) => {
      let key: PkiKey | undefined;
      try {
        key = await this.find(mountId, ref, tx);
      } catch {
        key = undefined;
      }
      if (!key) return { deleted: false, wasDefault: false, id: '' };
      if (await this.#repo.inUse(tx, mountId, key.id)) {
        throw invalid(`unable to delete key: key ${key.id} is in use by one or more issuers`);
      }
      const wasDefault = await this.#config.clearDefaultKeyIf(tx, mountId, key.id);
      await this.#repo.delete(tx, mountId, key.id);
      return { deleted: true, wasDefault, id: key.id };
    });
    if (out.deleted) this.#cache.delete(out.id);
    return { deleted: out.deleted, wasDefault: out.wasDefault };
  }

  /** Deletes every key of the mount (DELETE root); issuers must be gone first. */
  async deleteAll(tx: Executor, mountId: string): Promise<void> {
    const ids = await this.#repo.deleteAll(tx, mountId);
    for (const id of ids) this.#cache.delete(id);
  }

  async getDefaultKeyId(mountId: string): Promise<string> {
    return (await this.#config.getDefaults(mountId)).defaultKeyId;
  }

  /** config/keys: sets the default key from a reference. */
  async setDefault(mountId: string, ref: string): Promise<string> {
    if (ref.trim() === '' || ref === 'default')
      throw invalid("Invalid key specification; must be non-empty and can't be 'default'.");
    return this.#config.transaction(async (tx) => {
      const key = await this.resolve(mountId, ref, tx);
      await this.#config.setDefaultKey(tx, mountId, key.id);
      return key.id;
    });
  }

  /**
   * The private key as a KeyObject, from a bounded in-process cache (parsing a PEM costs
   * far more than a signature). Keys are immutable, so a cached entry is never stale.
   */
  async privateKey(mountId: string, keyId: string, ex: Executor = this.#repo.executor): Promise<KeyObject> {
    const hit = this.#cache.get(keyId);
    if (hit) return hit;
    const stored = await this.#repo.sealedPrivateKey(ex, mountId, keyId);
    if (stored === undefined) throw notFound(`key ${keyId} not found`);
    const key = parsePrivateKey(this.#secrets.open(stored, `pki-key:${keyId}`).toString('utf8')).key;
    this.#cache.set(keyId, key);
    return key;
  }
}
