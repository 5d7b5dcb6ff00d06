import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PkiIssuer } from '../issuers/issuer.js';
import {
  applyCrlConfig,
  autoRebuildDue,
  crlGroups,
  crlSignatureOptions,
  crlTimes,
  DEFAULT_CRL_CONFIG,
  revocationTimeFields,
  revokedIssuerEntries,
} from './revocation.js';

const issuer = (id: string, seq: number, over: Partial<PkiIssuer> = {}): PkiIssuer =>
  ({
    id,
    seq,
    mountId: 'm',
    name: '',
    keyId: `key-${id}`,
    subjectDer: Buffer.from(`subject-${id}`),
    publicKeySha256: `pk-${id}`,
    usage: ['crl-signing', 'issuing-certificates', 'ocsp-signing', 'read-only'],
    caChain: [id],
    revokedAt: null,
    serial: `0${seq}`,
    ...over,
  }) as PkiIssuer;

describe('config/crl rules', () => {
  it('applies partial writes and keeps the rest', () => {
    const { config, rebuild } = applyCrlConfig(DEFAULT_CRL_CONFIG, { expiry: '48h' });
    assert.equal(config.expiry, '48h');
    assert.equal(config.ocspExpiry, '12h');
    assert.equal(rebuild, false);
  });

  it('max_crl_entries: -1 disables, 0 and other negatives keep the value', () => {
    for (const [given, want] of [
      [-1, -1],
      [0, 100_000],
      [-5, 100_000],
      [10, 10],
    ] as const) {
      assert.equal(
        applyCrlConfig(DEFAULT_CRL_CONFIG, { maxCrlEntries: given }).config.maxCrlEntries,
        want,
        String(given),
      );
    }
  });

  const refused: [string, Parameters<typeof applyCrlConfig>[1], RegExp][] = [
    [
      'delta without auto rebuild',
      { enableDelta: true },
      /Delta CRLs cannot be enabled when auto rebuilding is disabled/,
    ],
    [
      'grace period not shorter than expiry',
      { autoRebuild: true, autoRebuildGracePeriod: '72h' },
      /grace period \(72h\) must be strictly shorter than CRL expiry \(72h\)/,
    ],
    [
      'delta interval not shorter than expiry',
      { autoRebuild: true, enableDelta: true, deltaRebuildInterval: '80h' },
      /delta rebuild window/,
    ],
    ['negative ocsp_expiry', { ocspExpiry: '-1s' }, /ocsp_expiry must be greater than or equal to 0/],
    ['unparsable expiry', { expiry: 'later' }, /invalid expiry/],
    ['zero expiry', { expiry: '0s' }, /positive/],
    ['unified CRLs', { unifiedCrl: true }, /Vault Enterprise/],
    ['cross-cluster revocation', { crossClusterRevocation: true }, /Vault Enterprise/],
  ];
  for (const [name, patch, msg] of refused) {
    it(`refuses ${name}`, () =>
      assert.throws(
        () => applyCrlConfig(DEFAULT_CRL_CONFIG, patch),
        (e: Error) => msg.test(e.message),
      ));
  }

  it('a grace period at least as long as expiry is fine while auto_rebuild is off', () => {
    assert.equal(
      applyCrlConfig(DEFAULT_CRL_CONFIG, { autoRebuildGracePeriod: '100h' }).config.autoRebuildGracePeriod,
      '100h',
    );
  });

  it('forces a rebuild when disable changes, auto rebuild turns off or delta toggles', () => {
    const auto = applyCrlConfig(DEFAULT_CRL_CONFIG, { autoRebuild: true }).config;
    assert.equal(applyCrlConfig(DEFAULT_CRL_CONFIG, { disable: true }).rebuild, true);
    assert.equal(applyCrlConfig(DEFAULT_CRL_CONFIG, { autoRebuild: true }).rebuild, false);
    assert.equal(applyCrlConfig(auto, { autoRebuild: false }).rebuild, true);
    assert.equal(applyCrlConfig(auto, { enableDelta: true }).rebuild, true);
    assert.equal(applyCrlConfig(auto, { expiry: '96h' }).rebuild, false);
  });

  it('schedules the automatic rebuild a grace period before nextUpdate', () => {
    const t = crlTimes({ ...DEFAULT_CRL_CONFIG, autoRebuildGracePeriod: '12h' });
    assert.equal(autoRebuildDue(new Date('2026-01-04T00:00:00Z'), t).toISOString(), '2026-01-03T12:00:00.000Z');
  });
});

describe('CRL groups', () => {
  it('issuers with one subject and key share a CRL signed by the newest that may sign CRLs', () => {
    const a = issuer('a', 1, { subjectDer: Buffer.from('S'), publicKeySha256: 'K' });
    const b = issuer('b', 2, { subjectDer: Buffer.from('S'), publicKeySha256: 'K' });
    const c = issuer('c', 3, { subjectDer: Buffer.from('S'), publicKeySha256: 'K', usage: ['read-only'] });
    const d = issuer('d', 4);
    const e = issuer('e', 5, { keyId: '' });
    const groups = crlGroups([d, c, b, a, e]);
    assert.deepEqual(
      groups.map((g) => [g.issuerIds, g.signer.id]),
      [
        [['a', 'b', 'c'], 'b'],
        [['d'], 'd'],
      ],
    );
  });

  it('lists a revoked issuer on its parent CRL only, never on its own', () => {
    const root = issuer('root', 1);
    const int = issuer('int', 2, {
      caChain: ['int', 'root'],
      revokedAt: new Date('2026-01-01T00:00:00Z'),
      serial: 'abcd',
    });
    const revokedRoot = issuer('r2', 3, { revokedAt: new Date('2026-01-01T00:00:00Z') });
    const [rootGroup, intGroup, r2Group] = crlGroups([root, int, revokedRoot]);
    assert.deepEqual(revokedIssuerEntries([root, int, revokedRoot], rootGroup!), [
      { serial: 'abcd', revokedAt: int.revokedAt },
    ]);
    assert.deepEqual(revokedIssuerEntries([root, int, revokedRoot], intGroup!), []);
    assert.deepEqual(revokedIssuerEntries([root, int, revokedRoot], r2Group!), []);
  });
});

describe('formatting', () => {
  it('answers revocation times as Unix seconds and RFC 3339', () => {
    assert.deepEqual(revocationTimeFields(new Date('2026-01-01T00:00:10.120Z')), {
      revocation_time: 1767225610,
      revocation_time_rfc3339: '2026-01-01T00:00:10.120Z',
    });
  });

  it('maps revocation_signature_algorithm to hash size and padding', () => {
    assert.deepEqual(crlSignatureOptions(''), {});
    assert.deepEqual(crlSignatureOptions('SHA384WithRSA'), { signatureBits: 384, usePss: false });
    assert.deepEqual(crlSignatureOptions('SHA512WithRSAPSS'), { signatureBits: 512, usePss: true });
    assert.deepEqual(crlSignatureOptions('PureEd25519'), {});
  });
});
