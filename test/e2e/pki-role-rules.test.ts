/**
 * Every role rule of issue and sign, end to end: one request per rule that the role allows
 * and one it refuses, the allowed certificates read back by openssl, the refusals a 400
 * naming the offending value with nothing stored. Rules as Vault implements them
 * (reference 16.1-16.10).
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { keyMatchesCert, openssl, verifyChain, x509Text } from './pki-issuers-openssl.js';
import { makeServerClient, mountWithRoot, opensslCsr, role, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';

/** A case: role fields, request body, and either the certificate's expected names or the refusal. */
interface Case {
  name: string;
  role: Record<string, unknown>;
  body: Record<string, unknown>;
  /** Subject as openssl prints it with -nameopt RFC2253 ('' for an empty subject). */
  subject?: string;
  /** The SAN line as openssl prints it, or null for no SAN extension. */
  sans?: string | null;
  /** Extra patterns the `openssl x509 -text` output must (true) or must not (false) contain. */
  text?: Array<[RegExp, boolean]>;
  /** A refusal: the 400 message must match. */
  error?: RegExp;
}

const EXAMPLE = { allowed_domains: 'example.com' };

const CASES: Case[] = [
  // Host names: bare domains, subdomains (any depth, case-sensitive suffix), both refused by default.
  {
    name: 'bare domain',
    role: { ...EXAMPLE, allow_bare_domains: true },
    body: { common_name: 'example.com' },
    subject: 'CN=example.com',
    sans: 'DNS:example.com',
  },
  {
    name: 'bare only: no subdomain',
    role: { ...EXAMPLE, allow_bare_domains: true },
    body: { common_name: 'a.example.com' },
    error: /^common name a\.example\.com not allowed by this role$/,
  },
  {
    name: 'subdomains only: no bare domain',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'example.com' },
    error: /^common name example\.com not allowed by this role$/,
  },
  {
    name: 'subdomains at any depth',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'a.b.c.example.com' },
    subject: 'CN=a.b.c.example.com',
    sans: 'DNS:a.b.c.example.com',
  },
  {
    name: 'subdomain suffix is case-sensitive',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'A.EXAMPLE.COM' },
    error: /common name A\.EXAMPLE\.COM not allowed/,
  },
  {
    name: 'a suffix that is not a label boundary',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'notexample.com' },
    error: /common name notexample\.com not allowed/,
  },
  {
    name: 'neither bare nor subdomains',
    role: { ...EXAMPLE },
    body: { common_name: 'example.com' },
    error: /common name example\.com not allowed/,
  },
  {
    name: 'alt names each checked',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'a.example.com', alt_names: 'b.example.com,evil.org' },
    error: /^subject alternate name evil\.org not allowed by this role$/,
  },
  {
    name: 'alt names de-duplicated and sorted after the CN',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'w.example.com', alt_names: 'z.example.com,b.example.com,z.example.com' },
    sans: 'DNS:w.example.com, DNS:b.example.com, DNS:z.example.com',
  },
  {
    name: 'IDNA names are converted to ASCII in SANs',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'bücher.example.com' },
    sans: 'DNS:xn--bcher-kva.example.com',
  },
  {
    name: 'an alt name that is no valid IDNA name',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'a.example.com', alt_names: 'not a host' },
    error: /not a host/,
  },

  // Globs: `*` spans dots; the three modes do not combine.
  {
    name: 'glob spans labels',
    role: { allowed_domains: '*.foo.com,bar-*.com', allow_glob_domains: true },
    body: { common_name: 'a.b.foo.com', alt_names: 'bar-x.com' },
    sans: 'DNS:a.b.foo.com, DNS:bar-x.com',
  },
  {
    name: 'glob needs what it names',
    role: { allowed_domains: '*.foo.com', allow_glob_domains: true },
    body: { common_name: 'foo.com' },
    error: /common name foo\.com not allowed/,
  },
  {
    name: 'glob off: the pattern is a literal',
    role: { allowed_domains: '*.foo.com', allow_subdomains: true },
    body: { common_name: 'a.foo.com' },
    error: /common name a\.foo\.com not allowed/,
  },
  {
    name: 'glob and subdomains do not combine',
    role: { allowed_domains: 'foo.*.example.com', allow_subdomains: true, allow_glob_domains: true },
    body: { common_name: 'bar.foo.baz.example.com' },
    error: /bar\.foo\.baz\.example\.com not allowed/,
  },

  // Wildcard certificates.
  {
    name: 'wildcard under subdomains',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: '*.example.com' },
    subject: 'CN=*.example.com',
    sans: 'DNS:*.example.com',
  },
  {
    name: 'partial wildcard label: allowed, but no hostname for the SANs',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'foo*.example.com' },
    subject: 'CN=foo*.example.com',
    sans: null,
  },
  {
    name: 'two wildcards',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: '*.*.example.com' },
    error: /\*\.\*\.example\.com not allowed/,
  },
  {
    name: 'wildcards off',
    role: { ...EXAMPLE, allow_subdomains: true, allow_wildcard_certificates: false },
    body: { common_name: '*.example.com' },
    error: /common name \*\.example\.com not allowed/,
  },
  {
    name: 'wildcards off beat allow_any_name',
    role: { allow_any_name: true, allow_wildcard_certificates: false },
    body: { common_name: '*.any.test' },
    error: /\*\.any\.test not allowed/,
  },
  {
    name: 'bare wildcard domain allows exactly itself',
    role: { allowed_domains: '*.example.com', allow_bare_domains: true },
    body: { common_name: '*.example.com' },
    sans: 'DNS:*.example.com',
  },
  {
    name: 'bare wildcard domain is no glob',
    role: { allowed_domains: '*.example.com', allow_bare_domains: true },
    body: { common_name: 'a.example.com' },
    error: /a\.example\.com not allowed/,
  },

  // localhost.
  {
    name: 'localhost allowed by default',
    role: {},
    body: { common_name: 'localhost', alt_names: 'localdomain' },
    sans: 'DNS:localhost, DNS:localdomain',
  },
  {
    name: 'no subdomains of localhost by default',
    role: {},
    body: { common_name: 'x.localhost' },
    error: /common name x\.localhost not allowed/,
  },
  {
    name: 'subdomains of localhost with allow_subdomains',
    role: { allow_subdomains: true },
    body: { common_name: 'x.localhost' },
    sans: 'DNS:x.localhost',
  },
  {
    name: 'allow_localhost false',
    role: { allow_localhost: false },
    body: { common_name: 'localhost' },
    error: /common name localhost not allowed/,
  },
  {
    name: 'an empty role allows nothing else',
    role: {},
    body: { common_name: 'a.test' },
    error: /common name a\.test not allowed/,
  },

  // allow_any_name, enforce_hostnames, cn_validations, require_cn.
  {
    name: 'any name',
    role: { allow_any_name: true },
    body: { common_name: 'whatever.test', alt_names: 'other.invalid' },
    sans: 'DNS:whatever.test, DNS:other.invalid',
  },
  {
    name: 'any name still needs a host name',
    role: { allow_any_name: true },
    body: { common_name: 'My Service' },
    error: /common name My Service not allowed/,
  },
  {
    name: 'enforce_hostnames off: a CN that is no host name, kept out of the SANs',
    role: { allow_any_name: true, enforce_hostnames: false },
    body: { common_name: 'My Service' },
    subject: 'CN=My Service',
    sans: null,
  },
  {
    name: 'cn_validations email refuses a host name CN',
    role: { allow_any_name: true, cn_validations: 'email' },
    body: { common_name: 'host.test' },
    error: /common name host\.test not allowed/,
  },
  {
    name: 'cn_validations email takes an e-mail CN',
    role: { allow_any_name: true, cn_validations: 'email' },
    body: { common_name: 'ops@host.test' },
    subject: 'CN=ops@host.test',
    sans: 'email:ops@host.test',
  },
  {
    name: 'cn_validations hostname refuses an e-mail CN',
    role: { allow_any_name: true, cn_validations: 'hostname' },
    body: { common_name: 'ops@host.test' },
    error: /common name ops@host\.test not allowed/,
  },
  {
    name: 'cn_validations disabled: any CN, SANs still checked',
    role: { ...EXAMPLE, cn_validations: 'disabled' },
    body: { common_name: 'Billing Service #1' },
    subject: 'CN=Billing Service #1',
    sans: null,
  },
  {
    name: 'cn_validations disabled does not open the SANs',
    role: { ...EXAMPLE, cn_validations: 'disabled' },
    body: { common_name: 'Not A Host', alt_names: 'evil.org' },
    error: /^subject alternate name evil\.org not allowed by this role$/,
  },
  {
    name: 'require_cn (default)',
    role: { allow_any_name: true },
    body: { alt_names: 'x.test' },
    error: /the common_name field is required/,
  },
  {
    name: 'require_cn false: an empty subject',
    role: { allow_any_name: true, require_cn: false },
    body: { alt_names: 'x.test' },
    subject: '',
    sans: 'DNS:x.test',
  },

  // E-mail names.
  {
    name: 'e-mail CN and alt name on an allowed domain',
    role: { ...EXAMPLE, allow_bare_domains: true, allow_subdomains: true },
    body: { common_name: 'ops@example.com', alt_names: 'dev@mail.example.com' },
    sans: 'email:ops@example.com, email:dev@mail.example.com',
  },
  {
    name: 'e-mail on another domain',
    role: { ...EXAMPLE, allow_bare_domains: true },
    body: { common_name: 'example.com', alt_names: 'me@evil.org' },
    error: /^email address me@evil\.org not allowed by this role$/,
  },
  {
    name: 'e-mail with two @',
    role: { ...EXAMPLE, allow_bare_domains: true },
    body: { common_name: 'example.com', alt_names: 'a@b@example.com' },
    error: /a@b@example\.com not allowed/,
  },
  {
    name: 'exclude_cn_from_sans',
    role: { ...EXAMPLE, allow_subdomains: true },
    body: { common_name: 'a.example.com', alt_names: 'b.example.com', exclude_cn_from_sans: true },
    subject: 'CN=a.example.com',
    sans: 'DNS:b.example.com',
  },

  // IP, URI and other SANs.
  {
    name: 'IP SANs allowed by default',
    role: { allow_any_name: true },
    body: { common_name: 'x.test', ip_sans: '10.0.0.1,2001:db8::1' },
    sans: 'DNS:x.test, IP Address:10.0.0.1, IP Address:2001:DB8:0:0:0:0:0:1',
  },
  {
    name: 'IP SANs off',
    role: { allow_any_name: true, allow_ip_sans: false },
    body: { common_name: 'x.test', ip_sans: '10.0.0.1' },
    error: /IP Subject Alternative Names are not allowed in this role.*10\.0\.0\.1/,
  },
  {
    name: 'a bad IP',
    role: { allow_any_name: true },
    body: { common_name: 'x.test', ip_sans: '10.0.0.300' },
    error: /the value "10\.0\.0\.300" is not a valid IP address/,
  },
  {
    name: 'a CN that looks like an IP stays a DNS name',
    role: { allow_any_name: true },
    body: { common_name: '10.1.2.3' },
    sans: 'DNS:10.1.2.3',
  },
  {
    name: 'URI SANs matching a glob',
    role: { allow_any_name: true, allowed_uri_sans: 'spiffe://example.com/*' },
    body: { common_name: 'x.test', uri_sans: 'spiffe://example.com/ns/a' },
    sans: 'DNS:x.test, URI:spiffe://example.com/ns/a',
  },
  {
    name: 'URI SAN outside the globs',
    role: { allow_any_name: true, allowed_uri_sans: 'spiffe://example.com/*' },
    body: { common_name: 'x.test', uri_sans: 'spiffe://other.org/a' },
    error: /spiffe:\/\/other\.org\/a not allowed/,
  },
  // Identity templates: tokens here have no identity entity, so a templated entry never fills and is skipped.
  {
    name: 'a templated URI entry is skipped, not matched literally',
    role: {
      allow_any_name: true,
      allowed_uri_sans: 'spiffe://example.com/{{identity.entity.id}}',
      allowed_uri_sans_template: true,
    },
    body: { common_name: 'x.test', uri_sans: 'spiffe://example.com/{{identity.entity.id}}' },
    error:
      /^URI Subject Alternative Name spiffe:\/\/example\.com\/\{\{identity\.entity\.id\}\} not allowed by this role$/,
  },
  {
    name: 'a templated domain entry is skipped, not matched literally',
    role: {
      allowed_domains: '{{identity.entity.name}}.example.com',
      allowed_domains_template: true,
      allow_bare_domains: true,
      enforce_hostnames: false,
    },
    body: { common_name: '{{identity.entity.name}}.example.com' },
    error: /^common name \{\{identity\.entity\.name\}\}\.example\.com not allowed by this role$/,
  },
  {
    name: 'without the template flag the same entry is literal text',
    role: { allow_any_name: true, allowed_uri_sans: 'spiffe://example.com/{{identity.entity.id}}' },
    body: { common_name: 'x.test', uri_sans: 'spiffe://example.com/{{identity.entity.id}}' },
    sans: 'DNS:x.test, URI:spiffe://example.com/{{identity.entity.id}}',
  },
  {
    name: 'URI SANs refused by default',
    role: { allow_any_name: true },
    body: { common_name: 'x.test', uri_sans: 'https://x.test/' },
    error: /URI Subject Alternative Names are not allowed in this role.*https:\/\/x\.test\//,
  },
  {
    name: 'other SAN matching OID and value glob',
    role: { allow_any_name: true, allowed_other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:*@example.com' },
    body: { common_name: 'x.test', other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:me@example.com' },
    text: [[/othername: (UPN|msUPN|1\.3\.6\.1\.4\.1\.311\.20\.2\.3)[:;]+\s*me@example\.com/, true]],
  },
  {
    name: 'other SAN value outside the glob',
    role: { allow_any_name: true, allowed_other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:*@example.com' },
    body: { common_name: 'x.test', other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:me@evil.org' },
    error: /^other SAN me@evil\.org not allowed for OID 1\.3\.6\.1\.4\.1\.311\.20\.2\.3 by this role$/,
  },
  {
    name: 'other SAN with another OID',
    role: { allow_any_name: true, allowed_other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:*' },
    body: { common_name: 'x.test', other_sans: '1.2.3.4;UTF8:v' },
    error: /^other SAN OID 1\.2\.3\.4 not allowed by this role$/,
  },
  {
    name: 'other SAN of a type other than UTF8',
    role: { allow_any_name: true, allowed_other_sans: '*' },
    body: { common_name: 'x.test', other_sans: '1.2.3.4;DER:v' },
    error: /only utf8 other SANs are supported/,
  },
  {
    name: 'other SANs: "*" allows any',
    role: { allow_any_name: true, allowed_other_sans: '*' },
    body: { common_name: 'x.test', other_sans: ['1.2.3.4;UTF8:anything'] },
    text: [[/othername: 1\.2\.3\.4[:;]+\s*anything/, true]],
  },

  // User ids and the subject serial number.
  {
    name: 'user ids: exact names case-insensitively, globs case-sensitively',
    role: { allow_any_name: true, allowed_user_ids: 'alice,svc-*' },
    body: { common_name: 'x.test', user_ids: 'ALICE,svc-1' },
    subject: 'UID=svc-1,UID=ALICE,CN=x.test',
  },
  {
    name: 'user id outside the globs',
    role: { allow_any_name: true, allowed_user_ids: 'alice,svc-*' },
    body: { common_name: 'x.test', user_ids: 'SVC-1' },
    error: /^user_id SVC-1 is not allowed by this role$/,
  },
  {
    name: 'user ids refused by default',
    role: { allow_any_name: true },
    body: { common_name: 'x.test', user_ids: 'bob' },
    error: /user_id bob is not allowed/,
  },
  {
    name: 'subject serial number matching a glob',
    role: { allow_any_name: true, allowed_serial_numbers: 'SN-*' },
    body: { common_name: 'x.test', serial_number: 'SN-42' },
    subject: 'serialNumber=SN-42,CN=x.test',
  },
  {
    name: 'subject serial number refused by default',
    role: { allow_any_name: true },
    body: { common_name: 'x.test', serial_number: 'SN-42' },
    error: /serial_number SN-42 not allowed by this role/,
  },

  // Subject attributes from the role.
  {
    name: 'subject attributes from the role',
    role: {
      allow_any_name: true,
      ou: 'Ops,Web',
      organization: 'Example',
      country: 'DE',
      locality: 'Berlin',
      province: 'BE',
      street_address: 'Main 1',
      postal_code: '10115',
    },
    body: { common_name: 'x.test' },
    // One multi-valued OU RDN (Ops, Web), printed in reverse by RFC 2253.
    subject: 'CN=x.test,OU=Web+OU=Ops,O=Example,postalCode=10115,street=Main 1,L=Berlin,ST=BE,C=DE',
  },

  // Key usage and extended key usage.
  {
    name: 'default usages',
    role: { allow_any_name: true },
    body: { common_name: 'x.test' },
    text: [
      [/X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment, Key Agreement\n/, true],
      [/X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication\n/, true],
      [/Basic Constraints/, false],
    ],
  },
  {
    name: 'every EKU flag and named EKUs, custom OIDs last',
    role: {
      allow_any_name: true,
      code_signing_flag: true,
      email_protection_flag: true,
      ext_key_usage: 'TimeStamping,ocspsigning,NoSuchUsage',
      ext_key_usage_oids: '1.3.6.1.4.1.99.7',
    },
    body: { common_name: 'x.test' },
    text: [
      [
        new RegExp(
          String.raw`X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication, ` +
            String.raw`Code Signing, E-mail Protection, Time Stamping, OCSP Signing, 1\.3\.6\.1\.4\.1\.99\.7\n`,
        ),
        true,
      ],
    ],
  },
  {
    name: 'no flags and an empty key usage: neither extension; CA:FALSE on request',
    role: {
      allow_any_name: true,
      server_flag: false,
      client_flag: false,
      key_usage: [],
      basic_constraints_valid_for_non_ca: true,
    },
    body: { common_name: 'x.test' },
    text: [
      [/Key Usage/, false],
      [/X509v3 Basic Constraints: critical\s+CA:FALSE/, true],
    ],
  },
  {
    name: 'key usage names are case-insensitive; unknown ones ignored',
    role: { allow_any_name: true, key_usage: 'digitalsignature,CONTENTCOMMITMENT,bogus' },
    body: { common_name: 'x.test' },
    text: [[/X509v3 Key Usage: critical\s+Digital Signature, Non Repudiation\n/, true]],
  },

  // Key types and sizes of issued keys.
  {
    name: 'EC P-384 key',
    role: { allow_any_name: true, key_type: 'ec', key_bits: 384 },
    body: { common_name: 'x.test' },
    text: [[/NIST CURVE: P-384/, true]],
  },
  {
    name: 'EC P-224 key',
    role: { allow_any_name: true, key_type: 'ec', key_bits: 224 },
    body: { common_name: 'x.test' },
    text: [[/NIST CURVE: P-224/, true]],
  },
  {
    name: 'EC P-521 key',
    role: { allow_any_name: true, key_type: 'ec', key_bits: 521 },
    body: { common_name: 'x.test' },
    text: [[/NIST CURVE: P-521/, true]],
  },
  {
    name: 'Ed25519 key',
    role: { allow_any_name: true, key_type: 'ed25519' },
    body: { common_name: 'x.test' },
    text: [[/Public Key Algorithm: ED25519/, true]],
  },
  {
    name: 'key type any cannot issue',
    role: { allow_any_name: true, key_type: 'any' },
    body: { common_name: 'x.test' },
    error: /role key type "any" not allowed for issuing certificates, only signing/,
  },

  // Validity.
  {
    name: 'ttl beyond the role max_ttl',
    role: { allow_any_name: true, max_ttl: '2h' },
    body: { common_name: 'x.test', ttl: '3h' },
    error: /ttl of 10800s .* longer than the maximum of 7200s .* role's max_ttl/,
  },
  {
    name: 'ttl beyond the mount max (role without max_ttl)',
    role: { allow_any_name: true },
    body: { common_name: 'x.test', ttl: '100000h' },
    error: /ttl of 360000000s .* mount's max lease TTL/,
  },
  {
    name: 'ttl and not_after together',
    role: { allow_any_name: true },
    body: { common_name: 'x.test', ttl: '1h', not_after: '2030-01-01T00:00:00Z' },
    error: /Either ttl or not_after should be provided/,
  },
  {
    name: 'role not_after with a request ttl',
    role: { allow_any_name: true, not_after: '2030-01-01T00:00:00Z' },
    body: { common_name: 'x.test', ttl: '1h' },
    error: /Either ttl or not_after should be provided/,
  },
  {
    name: 'not_after beyond the issuer (err)',
    role: { allow_any_name: true },
    body: { common_name: 'x.test', not_after: '9999-12-31T23:59:59Z' },
    error: /notAfter of 9999-12-31T23:59:59.* beyond the expiration of the CA certificate/,
  },
];

describeWithServer('pki role rules over HTTP', (server, kind) => {
  let v: Vault;
  let mount: string;
  let rootPem: string;
  let n = 0;
  before(async () => {
    v = makeServerClient(server);
    ({ mount, rootPem } = await mountWithRoot(v, { ttl: '8760h' }));
  });

  const issue = async (c: Case) => {
    const name = `r${++n}`;
    await role(v, mount, name, { key_type: 'ec', ...c.role });
    return v('POST', `${mount}/issue/${name}`, { body: c.body });
  };

  it('allows what each rule allows, and openssl reads the names and usages back', async () => {
    for (const c of CASES.filter((x) => !x.error)) {
      const r = await issue(c);
      assert.equal(r.status, 200, `${c.name}: ${r.text}`);
      const cert = r.json.data.certificate as string;
      assert.match(verifyChain(cert, [rootPem]), /OK/, c.name);
      assert.ok(keyMatchesCert(r.json.data.private_key, cert), c.name);
      const text = x509Text(cert);
      if (c.subject !== undefined) {
        const subject = openssl(['x509', '-noout', '-subject', '-nameopt', 'RFC2253'], cert)
          .trim()
          .replace(/^subject=\s*/, '');
        assert.equal(subject, c.subject, c.name);
      }
      if (c.sans !== undefined) {
        const m = /X509v3 Subject Alternative Name:(?: critical)?\s*\n\s*(.*?)\s*\n/.exec(text);
        assert.equal(m ? m[1] : null, c.sans, c.name);
      }
      for (const [re, present] of c.text ?? []) assert.equal(re.test(text), present, `${c.name}: ${re}\n${text}`);
    }
  });

  it('refuses what each rule refuses with a 400 naming the value, and stores nothing', async () => {
    const before = await storedSerials(v, mount);
    for (const c of CASES.filter((x) => x.error)) {
      const r = await issue(c);
      assert.equal(r.status, 400, `${c.name}: ${r.text}`);
      assert.match(r.contentType, /^application\/json/);
      assert.equal(r.json.errors.length, 1, c.name);
      assert.match(r.json.errors[0], c.error!, c.name);
    }
    assert.deepEqual(await storedSerials(v, mount), before);
  });

  it('an alt name that is no host name is left out of the SANs with a warning, any enforce_hostnames', async () => {
    const csr = opensslCsr('EC:P-256', '/CN=ignored.example.com').csr;
    const dropped = ['foo_bar.example.com', 'x..example.com'];
    for (const enforce of [true, false]) {
      const name = `drop-${enforce}`;
      await role(v, mount, name, {
        ...EXAMPLE,
        allow_subdomains: true,
        key_type: 'ec',
        enforce_hostnames: enforce,
        use_csr_common_name: false,
        use_csr_sans: false,
      });
      for (const op of ['issue', 'sign'] as const) {
        const body = {
          common_name: 'a.example.com',
          alt_names: [...dropped, 'b.example.com'].join(','),
          ...(op === 'sign' ? { csr } : {}),
        };
        const r = await v('POST', `${mount}/${op}/${name}`, { body });
        assert.equal(r.status, 200, `${op} ${name}: ${r.text}`);
        const cert = r.json.data.certificate as string;
        assert.match(verifyChain(cert, [rootPem]), /OK/);
        const m = /X509v3 Subject Alternative Name:(?: critical)?\s*\n\s*(.*?)\s*\n/.exec(x509Text(cert));
        assert.equal(m?.[1], 'DNS:a.example.com, DNS:b.example.com', `${op} ${name}`);
        const warnings = (r.json.warnings ?? []) as string[];
        for (const d of dropped) {
          assert.equal(
            warnings.filter((w) => w.includes(`"${d}"`)).length,
            1,
            `${op} ${name}: a warning names ${d}: ${JSON.stringify(warnings)}`,
          );
        }
      }
    }
  });

  it('role TTLs: ttl is the default, max_ttl may exceed the mount max, the role not_after wins', async () => {
    const m = `pki-ttl-${kind}`;
    assert.equal(
      (
        await v('POST', `sys/mounts/${m}`, {
          body: { type: 'pki', config: { default_lease_ttl: '10h', max_lease_ttl: '100h' } },
        })
      ).status,
      204,
    );
    const root = await v('POST', `${m}/root/generate/internal`, {
      body: { common_name: 'TTL Root', key_type: 'ec', not_after: '2099-01-01T00:00:00Z' },
    });
    assert.equal(root.status, 200, root.text);
    const expiry = async (roleBody: Record<string, unknown>, body: Record<string, unknown>) => {
      await role(v, m, 't', { allow_any_name: true, key_type: 'ec', ...roleBody });
      const r = await v('POST', `${m}/issue/t`, { body: { common_name: 'x.test', ...body } });
      assert.equal(r.status, 200, r.text);
      const notAfter =
        Date.parse(openssl(['x509', '-noout', '-enddate'], r.json.data.certificate).replace('notAfter=', '').trim()) /
        1000;
      assert.equal(notAfter, r.json.data.expiration);
      return notAfter - Math.floor(Date.now() / 1000);
    };
    const near = (got: number, want: number) => assert.ok(Math.abs(got - want) <= 5, `${got} vs ${want}`);
    near(await expiry({}, {}), 10 * 3600); // the mount default
    near(await expiry({ ttl: '2h' }, {}), 2 * 3600); // the role default
    near(await expiry({ ttl: '2h' }, { ttl: '3h' }), 3 * 3600); // the request
    near(await expiry({ max_ttl: '300h' }, { ttl: '200h' }), 200 * 3600); // the role max, above the mount max
    const fixed = await expiry({ not_after: '2030-06-01T00:00:00Z' }, { not_after: '2031-01-01T00:00:00Z' });
    near(fixed, Date.parse('2030-06-01T00:00:00Z') / 1000 - Math.floor(Date.now() / 1000));
  });

  it('mount tune: issue follows tuned lease TTLs, a ttl past the new max is refused, later roots capped', async () => {
    const m = `pki-tune-${kind}`;
    assert.equal(
      (
        await v('POST', `sys/mounts/${m}`, {
          body: { type: 'pki', config: { default_lease_ttl: '10h', max_lease_ttl: '100h' } },
        })
      ).status,
      204,
    );
    let r = await v('POST', `${m}/root/generate/internal`, {
      body: { common_name: 'Tune Root', key_type: 'ec', not_after: '2099-01-01T00:00:00Z', issuer_name: 'first' },
    });
    assert.equal(r.status, 200, r.text);
    const firstRoot = r.json.data.certificate as string;
    await role(v, m, 'plain', { allow_any_name: true, key_type: 'ec' });
    await role(v, m, 'long', { allow_any_name: true, key_type: 'ec', ttl: '8h' });
    /** Seconds from now to the certificate's notAfter, as openssl reads it. */
    const lifetime = (pem: string) =>
      Date.parse(openssl(['x509', '-noout', '-enddate'], pem).replace('notAfter=', '').trim()) / 1000 -
      Math.floor(Date.now() / 1000);
    const near = (got: number, want: number, what: string) =>
      assert.ok(Math.abs(got - want) <= 5, `${what}: ${got} vs ${want}`);
    const issue = async (roleName: string, body: Record<string, unknown> = {}) => {
      const res = await v('POST', `${m}/issue/${roleName}`, { body: { common_name: 'tune.test', ...body } });
      assert.equal(res.status, 200, res.text);
      assert.match(verifyChain(res.json.data.certificate, [firstRoot]), /OK/);
      return res.json;
    };

    near(lifetime((await issue('plain')).data.certificate), 10 * 3600, 'the default before the tune');
    assert.equal(
      (await v('POST', `sys/mounts/${m}/tune`, { body: { default_lease_ttl: '3h', max_lease_ttl: 21600 } })).status,
      204,
    );
    r = await v('GET', `sys/mounts/${m}/tune`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.default_lease_ttl, 3 * 3600);
    assert.equal(r.json.data.max_lease_ttl, 6 * 3600);

    near(lifetime((await issue('plain')).data.certificate), 3 * 3600, 'the tuned default');
    near(lifetime((await issue('plain', { ttl: '5h' })).data.certificate), 5 * 3600, 'a ttl below the tuned max');
    // The role's ttl above the tuned max is a default, clamped with a warning; a requested ttl above it is refused.
    const clamped = await issue('long');
    near(lifetime(clamped.data.certificate), 6 * 3600, 'a role default clamped to the tuned max');
    assert.ok(
      (clamped.warnings as string[]).some((w) => /maxTTL "6h0m0s"/.test(w)),
      JSON.stringify(clamped.warnings),
    );
    const before = await storedSerials(v, m);
    r = await v('POST', `${m}/issue/plain`, { body: { common_name: 'tune.test', ttl: '7h' } });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.errors[0], /ttl of 25200s .* longer than the maximum of 21600s .* mount's max lease TTL/);
    assert.deepEqual(await storedSerials(v, m), before, 'nothing stored for the refusal');

    // A root generated after the tune: its ttl is capped to the new max (with a warning), its default is the new
    // default.
    r = await v('POST', `${m}/issuers/generate/root/internal`, {
      body: { common_name: 'Capped Root', key_type: 'ec', ttl: '48h', issuer_name: 'capped' },
    });
    assert.equal(r.status, 200, r.text);
    near(lifetime(r.json.data.certificate), 6 * 3600, 'a root ttl above the tuned max');
    assert.ok(
      (r.json.warnings as string[]).some((w) => /maximum of 21600s/.test(w)),
      JSON.stringify(r.json.warnings),
    );
    assert.match(verifyChain(r.json.data.certificate, [r.json.data.certificate]), /OK/);
    r = await v('POST', `${m}/issuers/generate/root/internal`, {
      body: { common_name: 'Default Root', key_type: 'ec', issuer_name: 'defaulted' },
    });
    assert.equal(r.status, 200, r.text);
    near(lifetime(r.json.data.certificate), 3 * 3600, 'a root without ttl takes the tuned default');
  });

  it('sign: serial number and user ids from the CSR per serial_number_source; CSR names checked too', async () => {
    const csr = opensslCsr(
      'EC:P-256',
      '/CN=s.example.com/serialNumber=CSR-7/UID=carol',
      'DNS:alt.example.com,URI:spiffe://example.com/a',
    ).csr;
    const sign = async (name: string, roleBody: Record<string, unknown>, body: Record<string, unknown> = {}) => {
      await role(v, mount, name, { ...EXAMPLE, allow_subdomains: true, key_type: 'ec', ...roleBody });
      return v('POST', `${mount}/sign/${name}`, { body: { csr, ...body } });
    };
    const subjectOf = (pem: string) =>
      openssl(['x509', '-noout', '-subject', '-nameopt', 'RFC2253'], pem)
        .trim()
        .replace(/^subject=\s*/, '');
    const open = { allowed_serial_numbers: '*', allowed_user_ids: '*', allowed_uri_sans: 'spiffe://example.com/*' };

    let r = await sign('csr-default', { allowed_uri_sans: 'spiffe://example.com/*', allowed_user_ids: '*' });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['serial_number CSR-7 not allowed by this role']);
    r = await sign('csr-uid', { allowed_uri_sans: 'spiffe://example.com/*', allowed_serial_numbers: '*' });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['user_id carol is not allowed by this role']);
    r = await sign('csr-uri', { allowed_serial_numbers: '*', allowed_user_ids: '*' });
    assert.equal(r.status, 400);
    assert.match(
      r.json.errors[0],
      new RegExp(
        String.raw`URI Subject Alternative Names are not allowed in this role, but were provided via the CSR: ` +
          String.raw`spiffe:\/\/example\.com\/a`,
      ),
    );

    r = await sign('csr-json-csr', open);
    assert.equal(r.status, 200, r.text);
    assert.equal(subjectOf(r.json.data.certificate), 'UID=carol,serialNumber=CSR-7,CN=s.example.com');
    assert.match(
      x509Text(r.json.data.certificate),
      /DNS:(s|alt)\.example\.com, DNS:(alt|s)\.example\.com, URI:spiffe:\/\/example\.com\/a/,
    );
    r = await sign('csr-request', open, { serial_number: 'REQ-1', user_ids: 'dave' });
    assert.equal(subjectOf(r.json.data.certificate), 'UID=dave,serialNumber=REQ-1,CN=s.example.com');
    r = await sign('csr-json', { ...open, serial_number_source: 'json' });
    assert.equal(subjectOf(r.json.data.certificate), 'UID=carol,CN=s.example.com');
    assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);

    // A CSR whose names the role does not allow, and one whose CN the role would take from the request.
    const evil = opensslCsr('EC:P-256', '/CN=evil.org').csr;
    r = await v('POST', `${mount}/sign/csr-json`, { body: { csr: evil } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['common name evil.org not allowed by this role']);
    await role(v, mount, 'csr-own', {
      ...EXAMPLE,
      allow_subdomains: true,
      key_type: 'ec',
      use_csr_common_name: false,
      use_csr_sans: false,
    });
    r = await v('POST', `${mount}/sign/csr-own`, { body: { csr: evil, common_name: 'ok.example.com' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(subjectOf(r.json.data.certificate), 'CN=ok.example.com');
    assert.equal(
      openssl(['x509', '-noout', '-pubkey'], r.json.data.certificate),
      openssl(['req', '-noout', '-pubkey'], evil),
    );
  });
});
