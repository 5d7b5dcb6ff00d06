import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/db/database.js';
import { MountConfigRepo } from '../../src/pki/config/mount-config-repo.js';
import { MountConfigService } from '../../src/pki/config/mount-config-service.js';
import type { RootRequest } from '../../src/pki/issuers/ca-request.js';
import { CaService } from '../../src/pki/issuers/ca-service.js';
import { IssuerRepo } from '../../src/pki/issuers/issuer-repo.js';
import { IssuerService } from '../../src/pki/issuers/issuer-service.js';
import { KeyRepo } from '../../src/pki/keys/key-repo.js';
import { KeyService } from '../../src/pki/keys/key-service.js';
import { SecretBox } from '../../src/secrets/secret-box.js';
import type { Clock } from '../../src/shared/clock.js';

/** The services every PKI module stands on (mount config, keys, issuers, CA), as PkiServices builds them. */
export interface PkiCore {
  config: MountConfigService;
  keys: KeyService;
  issuers: IssuerService;
  ca: CaService;
  secrets: SecretBox;
}

/** PkiCore over a migrated database; `secrets` defaults to a fresh random master key. */
export function pkiCore(database: Db, clock: Clock, secrets = new SecretBox(randomBytes(32))): PkiCore {
  const db = database.kysely;
  const config = new MountConfigService({ repo: new MountConfigRepo({ db, units: database.units }), clock });
  const keys = new KeyService({ repo: new KeyRepo({ db }), config, secrets, clock });
  const issuers = new IssuerService({ repo: new IssuerRepo({ db }), keys, config, clock });
  return { config, keys, issuers, ca: new CaService({ issuers, clock }), secrets };
}

/** Mount TTL limits for generateRoot: 30 days by default, 10 years at most. */
export const ROOT_LIMITS = { defaultTtlSeconds: 86400 * 30, maxTtlSeconds: 86400 * 3650 };

/** A root/generate request as its route parses it: an internal EC P-256 root, 30 days. */
export function rootRequest(over: Partial<RootRequest> = {}): RootRequest {
  return {
    commonName: 'Service Root',
    altNames: [],
    ipSans: [],
    uriSans: [],
    otherSans: [],
    excludeCnFromSans: false,
    ou: [],
    organization: [],
    country: [],
    locality: [],
    province: [],
    streetAddress: [],
    postalCode: [],
    serialNumber: '',
    type: 'internal',
    keyType: 'ec',
    keyBits: 256,
    keyName: '',
    keyRef: 'default',
    managedKeyName: '',
    managedKeyId: '',
    ttl: 86400 * 30,
    notAfter: '',
    format: 'pem',
    privateKeyFormat: 'der',
    signatureBits: 0,
    usePss: false,
    maxPathLength: -1,
    keyUsage: [],
    permittedDnsDomains: [],
    notBeforeDuration: 30,
    issuerName: '',
    ...over,
  };
}
