import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultRoleInput, normalizeRole } from './role.js';
import type { PkiRole } from './role.js';
import {
  checkIpSans,
  checkOtherSans,
  checkUriSans,
  checkUserIds,
  commonNameError,
  computeValidity,
  globMatch,
  leafExtKeyUsages,
  nameAllowed,
  resolveNames,
} from './role-policy.js';

const role = (over: Partial<PkiRole> = {}): PkiRole => ({ ...normalizeRole(defaultRoleInput()).role, ...over });

describe('role policy: host names (reference 16.2)', () => {
  const cases: [string, Partial<PkiRole>, string, boolean][] = [
    ['bare domain refused by default', { allowed_domains: ['example.com'] }, 'example.com', false],
    [
      'bare domain with allow_bare_domains',
      { allowed_domains: ['example.com'], allow_bare_domains: true },
      'example.com',
      true,
    ],
    ['subdomain refused without allow_subdomains', { allowed_domains: ['example.com'] }, 'a.example.com', false],
    ['subdomain any depth', { allowed_domains: ['example.com'], allow_subdomains: true }, 'a.b.c.example.com', true],
    [
      'suffix without dot is not a subdomain',
      { allowed_domains: ['example.com'], allow_subdomains: true },
      'badexample.com',
      false,
    ],
    ['wildcard subdomain', { allowed_domains: ['example.com'], allow_subdomains: true }, '*.example.com', true],
    [
      'wildcard refused when not allowed',
      { allowed_domains: ['example.com'], allow_subdomains: true, allow_wildcard_certificates: false },
      '*.example.com',
      false,
    ],
    [
      'wildcard refused beats allow_any_name',
      { allow_any_name: true, allow_wildcard_certificates: false },
      '*.example.com',
      false,
    ],
    ['two wildcards refused', { allowed_domains: ['example.com'], allow_subdomains: true }, '*.*.example.com', false],
    ['partial wildcard label', { allowed_domains: ['example.com'], allow_subdomains: true }, 'foo*.example.com', true],
    ['glob domain', { allowed_domains: ['*.example.com'], allow_glob_domains: true }, 'a.b.example.com', true],
    ['glob needs allow_glob_domains', { allowed_domains: ['*.example.com'] }, 'a.example.com', false],
    [
      'glob does not match other domain',
      { allowed_domains: ['*.example.com'], allow_glob_domains: true },
      'a.example.org',
      false,
    ],
    ['localhost allowed by default', {}, 'localhost', true],
    ['localhost refused when disabled', { allow_localhost: false }, 'localhost', false],
    ['localdomain allowed', {}, 'localdomain', true],
    ['sub.localhost needs allow_subdomains', {}, 'x.localhost', false],
    ['sub.localhost with allow_subdomains', { allow_subdomains: true }, 'x.localhost', true],
    ['any name', { allow_any_name: true }, 'anything.org', true],
    ['any name still enforces hostnames', { allow_any_name: true }, 'bad_name.org', false],
    ['hostnames not enforced', { allow_any_name: true, enforce_hostnames: false }, 'bad_name.org', true],
    [
      'email with allowed domain (subdomain rule on domain part)',
      { allowed_domains: ['example.com'], allow_bare_domains: true },
      'me@example.com',
      true,
    ],
    [
      'email with other domain',
      { allowed_domains: ['example.com'], allow_bare_domains: true },
      'me@example.org',
      false,
    ],
    ['email with two @', { allow_any_name: true }, 'a@b@example.com', false],
    [
      'bare domain case-insensitive',
      { allowed_domains: ['Example.COM'], allow_bare_domains: true },
      'example.com',
      true,
    ],
    ['empty allowed_domains allows nothing but localhost', {}, 'example.com', false],
  ];
  for (const [name, over, value, want] of cases) {
    it(name, () => assert.equal(nameAllowed(value, role(over)), want, value));
  }
});

describe('role policy: common name validations (16.3)', () => {
  it('disabled accepts anything', () =>
    assert.equal(commonNameError('My Service', role({ cn_validations: ['disabled'] })), undefined));
  it('hostname validation refuses e-mail CN', () =>
    assert.match(
      commonNameError('me@example.com', role({ allow_any_name: true, cn_validations: ['hostname'] })) ?? '',
      /common name me@example.com not allowed/,
    ));
  it('email validation accepts e-mail CN', () =>
    assert.equal(
      commonNameError('me@example.com', role({ allow_any_name: true, cn_validations: ['email'] })),
      undefined,
    ));
  it('a CN with spaces fails the name rules', () =>
    assert.match(commonNameError('My Service', role({ allow_any_name: true })) ?? '', /not allowed/));
  it('bad cn_validations values are refused on write', () =>
    assert.throws(
      () => normalizeRole({ ...defaultRoleInput(), cn_validations: ['disabled', 'email'] }),
      /cannot specify disabled/,
    ));
});

describe('role policy: SANs and user ids (16.4-16.7)', () => {
  it('ip sans allowed by default, refused when disabled, invalid IPs rejected', () => {
    assert.doesNotThrow(() => checkIpSans(['10.0.0.1', '::1'], role(), 'API'));
    assert.throws(
      () => checkIpSans(['10.0.0.1'], role({ allow_ip_sans: false }), 'API'),
      /IP Subject Alternative Names are not allowed.*10\.0\.0\.1/,
    );
    assert.throws(() => checkIpSans(['10.0.0.300'], role(), 'API'), /"10\.0\.0\.300" is not a valid IP/);
  });
  it('uri sans need a matching glob', () => {
    assert.throws(() => checkUriSans(['spiffe://a/b'], role(), 'API'), /URI Subject Alternative Names are not allowed/);
    assert.doesNotThrow(() => checkUriSans(['spiffe://a/b'], role({ allowed_uri_sans: ['spiffe://a/*'] }), 'API'));
    assert.throws(
      () => checkUriSans(['spiffe://b/x'], role({ allowed_uri_sans: ['spiffe://a/*'] }), 'API'),
      /spiffe:\/\/b\/x not allowed/,
    );
  });
  it('other sans match by OID and value glob', () => {
    const allowed = ['1.2.3.4;UTF8:dev-*'];
    assert.doesNotThrow(() => checkOtherSans([{ oid: '1.2.3.4', value: 'dev-1' }], allowed));
    assert.throws(
      () => checkOtherSans([{ oid: '1.2.3.4', value: 'prod' }], allowed),
      /other SAN prod not allowed for OID 1\.2\.3\.4/,
    );
    assert.throws(() => checkOtherSans([{ oid: '1.2.3.5', value: 'dev-1' }], allowed), /OID 1\.2\.3\.5 not allowed/);
    assert.doesNotThrow(() => checkOtherSans([{ oid: '9.9', value: 'x' }], ['*']));
    assert.throws(() => checkOtherSans([{ oid: '1.2.3.4', value: 'x' }], []), /not allowed/);
  });
  it('user ids: exact (case-insensitive) or glob; none allowed by default', () => {
    assert.throws(() => checkUserIds(['alice'], role()), /user_id alice is not allowed/);
    assert.doesNotThrow(() => checkUserIds(['ALICE'], role({ allowed_user_ids: ['alice'] })));
    assert.doesNotThrow(() => checkUserIds(['svc-1'], role({ allowed_user_ids: ['svc-*'] })));
  });
  it('glob matching', () => {
    assert.equal(globMatch('*.example.com', 'a.b.example.com'), true);
    assert.equal(globMatch('a*b*c', 'axxbyyc'), true);
    assert.equal(globMatch('a*b*c', 'axxc'), false);
    assert.equal(globMatch('abc', 'abc'), true);
  });
});

describe('role policy: resolveNames (16.1)', () => {
  const req = {
    commonName: '',
    altNames: [] as string[],
    ipSans: [] as string[],
    uriSans: [] as string[],
    otherSans: [] as string[],
    userIds: [] as string[],
    serialNumber: '',
    excludeCnFromSans: false,
  };
  const web = role({ allowed_domains: ['example.com'], allow_subdomains: true });
  it('CN goes into DNS SANs unless excluded', () => {
    assert.deepEqual(resolveNames({ ...req, commonName: 'a.example.com' }, web).dns, ['a.example.com']);
    assert.deepEqual(resolveNames({ ...req, commonName: 'a.example.com', excludeCnFromSans: true }, web).dns, []);
  });
  it('require_cn', () => {
    assert.throws(() => resolveNames(req, web), /common_name field is required/);
    assert.doesNotThrow(() => resolveNames(req, role({ require_cn: false })));
  });
  it('any alt name outside the role denies the request', () => {
    assert.throws(
      () => resolveNames({ ...req, commonName: 'a.example.com', altNames: ['b.example.com', 'evil.org'] }, web),
      /subject alternate name evil\.org not allowed/,
    );
  });
  it('an alt name that is no host name is left out with a warning naming it', () => {
    for (const enforce of [true, false]) {
      const n = resolveNames(
        { ...req, commonName: 'a.example.com', altNames: ['x..example.com', 'foo_bar.example.com', 'b.example.com'] },
        { ...web, enforce_hostnames: enforce },
      );
      assert.deepEqual(n.dns, ['a.example.com', 'b.example.com']);
      assert.equal(n.warnings.length, 2);
      assert.match(n.warnings[0]!, /"foo_bar\.example\.com"/);
      assert.match(n.warnings[1]!, /"x\.\.example\.com"/);
    }
  });
  it('CSR names are used with use_csr_sans and use_csr_common_name', () => {
    const csr = {
      commonName: 'c.example.com',
      dns: ['d.example.com'],
      emails: [],
      ips: ['10.1.1.1'],
      uris: [],
      otherSans: [],
      userIds: [],
      serialNumber: '',
    };
    const n = resolveNames({ ...req, commonName: 'x.example.com', altNames: ['y.example.com'] }, web, csr);
    assert.equal(n.commonName, 'c.example.com');
    assert.deepEqual(n.dns.sort(), ['c.example.com', 'd.example.com']);
    assert.deepEqual(n.ips, ['10.1.1.1']);
    assert.equal(n.warnings.length, 2);
    const own = resolveNames(
      { ...req, commonName: 'x.example.com', altNames: ['y.example.com'] },
      { ...web, use_csr_common_name: false, use_csr_sans: false },
      csr,
    );
    assert.equal(own.commonName, 'x.example.com');
    assert.deepEqual(own.dns, ['x.example.com', 'y.example.com']);
  });
  it('a CSR subject serialNumber fails on default roles (json-csr source)', () => {
    const csr = {
      commonName: 'c.example.com',
      dns: [],
      emails: [],
      ips: [],
      uris: [],
      otherSans: [],
      userIds: [],
      serialNumber: 'SN1',
    };
    assert.throws(() => resolveNames(req, web, csr), /serial_number SN1 not allowed/);
    assert.doesNotThrow(() => resolveNames(req, { ...web, serial_number_source: 'json' }, csr));
  });
});

describe('role policy: validity (16.8)', () => {
  const now = new Date('2030-01-01T00:00:00Z');
  const base = {
    now,
    ttl: 0,
    notAfter: '',
    role: { ttl: 0, max_ttl: 0, not_after: '', not_before_duration: 30 },
    mountDefaultTtl: 3600,
    mountMaxTtl: 7200,
    issuerNotAfter: new Date('2031-01-01T00:00:00Z'),
    leafNotAfterBehavior: 'err' as const,
  };
  const cases: [string, Partial<typeof base>, string | RegExp][] = [
    ['mount default ttl', {}, '2030-01-01T01:00:00.000Z'],
    ['role ttl', { role: { ...base.role, ttl: 60 } }, '2030-01-01T00:01:00.000Z'],
    ['request ttl', { ttl: 120 }, '2030-01-01T00:02:00.000Z'],
    [
      'requested ttl beyond the mount max is refused',
      { ttl: 99999 },
      /ttl of 99999s .* longer than the maximum of 7200s .*mount's max lease TTL/,
    ],
    [
      'requested ttl beyond the role max is refused',
      { ttl: 601, role: { ...base.role, max_ttl: 600 } },
      /maximum of 600s .*role's max_ttl/,
    ],
    ['mount default ttl clamped to role max', { role: { ...base.role, max_ttl: 600 } }, '2030-01-01T00:10:00.000Z'],
    ['role ttl clamped to mount max', { role: { ...base.role, ttl: 99999 } }, '2030-01-01T02:00:00.000Z'],
    ['not_after', { notAfter: '2030-06-01T00:00:00Z' }, '2030-06-01T00:00:00.000Z'],
    ['ttl and not_after together', { ttl: 10, notAfter: '2030-06-01T00:00:00Z' }, /Either ttl or not_after/],
    ['bad not_after', { notAfter: '2030-06-01' }, /failed to parse not_after/],
    ['beyond issuer: err', { notAfter: '2032-01-01T00:00:00Z' }, /beyond the expiration of the CA certificate/],
    [
      'beyond issuer: truncate',
      { notAfter: '2032-01-01T00:00:00Z', leafNotAfterBehavior: 'truncate' as never },
      '2031-01-01T00:00:00.000Z',
    ],
    [
      'beyond issuer: permit',
      { notAfter: '2032-01-01T00:00:00Z', leafNotAfterBehavior: 'permit' as never },
      '2032-01-01T00:00:00.000Z',
    ],
  ];
  for (const [name, over, want] of cases) {
    it(name, () => {
      const run = () => computeValidity({ ...base, ...over });
      if (want instanceof RegExp) assert.throws(run, want);
      else assert.equal(run().notAfter.toISOString(), want);
    });
  }
  it('not_before_duration backdates NotBefore', () => {
    assert.equal(computeValidity(base).notBefore.toISOString(), '2029-12-31T23:59:30.000Z');
    assert.equal(
      computeValidity({ ...base, role: { ...base.role, not_before_duration: 300 } }).notBefore.toISOString(),
      '2029-12-31T23:55:00.000Z',
    );
  });
});

describe('role policy: key usages and role normalisation', () => {
  it('EKU flags in Vault order, then OIDs', () => {
    assert.deepEqual(leafExtKeyUsages(role()), ['ServerAuth', 'ClientAuth']);
    assert.deepEqual(leafExtKeyUsages(role({ server_flag: false, client_flag: false })), []);
    assert.deepEqual(
      leafExtKeyUsages(
        role({ code_signing_flag: true, ext_key_usage: ['timestamping', 'Any'], ext_key_usage_oids: ['1.2.3'] }),
      ),
      ['Any', 'ServerAuth', 'ClientAuth', 'CodeSigning', 'TimeStamping', '1.2.3'],
    );
  });
  it('key bits and signature bits resolve like Vault', () => {
    assert.equal(role().key_bits, 2048);
    assert.equal(role().signature_bits, 256);
    const ec = normalizeRole({ ...defaultRoleInput(), key_type: 'ec' }).role;
    assert.deepEqual([ec.key_bits, ec.signature_bits], [256, 0]);
    assert.throws(
      () => normalizeRole({ ...defaultRoleInput(), key_type: 'rsa', key_bits: 1024 }),
      /RSA keys < 2048 bits/,
    );
    assert.throws(
      () => normalizeRole({ ...defaultRoleInput(), key_type: 'ec', key_bits: 255 }),
      /unsupported bit length for EC key: 255/,
    );
    assert.throws(() => normalizeRole({ ...defaultRoleInput(), key_type: 'dsa' }), /unknown key type/);
    assert.throws(
      () => normalizeRole({ ...defaultRoleInput(), signature_bits: 100 }),
      /unsupported hash signature algorithm: 100/,
    );
  });
  it('ttl above max_ttl is refused; no_store forces generate_lease off', () => {
    assert.throws(
      () => normalizeRole({ ...defaultRoleInput(), ttl: 100, max_ttl: 10 }),
      /"ttl" value must be less than "max_ttl" value/,
    );
    const r = normalizeRole({ ...defaultRoleInput(), no_store: true, generate_lease: true });
    assert.equal(r.role.generate_lease, false);
    assert.equal(r.warnings.length, 1);
  });
});
