import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { openssl, opensslRootCa, verifyChain, withTmp, x509Text } from './pki-issuers-openssl.js';
import { makeServerClient, mountWithRoot, role, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { keyIdOf, validity } from './pki-privileged-helpers.js';

/** One `openssl x509 -text` extension block (its header line and value lines). */
function extension(text: string, name: string): string {
  const m = new RegExp(`\\n( +)${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:[^\\n]*\\n((?:\\1 +[^\\n]*\\n)+)`).exec(
    text,
  );
  return m ? m[0].trim() : '';
}

const field = (text: string, name: string): string => new RegExp(`${name}: ?([^\\n]*)`).exec(text)?.[1]?.trim() ?? '';

/** A self-signed RSA CA made by openssl, signed with SHA-512. */
function opensslRsaCa(cn: string): string {
  return withTmp((dir) => {
    const key = join(dir, 'k.pem');
    openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', key]);
    return openssl([
      'req',
      '-new',
      '-x509',
      '-key',
      key,
      '-subj',
      `/CN=${cn}`,
      '-days',
      '30',
      '-sha512',
      '-addext',
      'basicConstraints=critical,CA:true',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]).trim();
  });
}

describeWithServer('pki sign-self-issued', (server) => {
  let v: Vault;
  before(async () => {
    v = makeServerClient(server);
  });

  it('root rollover: the new root cross-signed by the old keeps old leaves valid, new ones chain to old', async () => {
    const { mount, rootPem: oldRoot } = await mountWithRoot(v, { issuerName: 'old' });
    await role(v, mount, 'web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      ttl: '1h',
    });
    let r = await v('POST', `${mount}/issue/web`, { body: { common_name: 'old.example.com' } });
    assert.equal(r.status, 200, r.text);
    const oldLeaf = r.json.data.certificate as string;

    r = await v('POST', `${mount}/root/rotate/internal`, {
      body: { common_name: 'Next Root', key_type: 'ec', ttl: '8760h' },
    });
    assert.equal(r.status, 200, r.text);
    const newRoot = r.json.data.certificate as string;
    // The old issuer has its own distribution points; they replace the new root's.
    r = await v('PATCH', `${mount}/issuer/old`, {
      body: {
        issuing_certificates: 'http://old.test/ca',
        crl_distribution_points: 'http://old.test/crl',
        ocsp_servers: 'http://old.test/ocsp',
      },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200, r.text);
    const stored = await storedSerials(v, mount);

    r = await v('POST', `${mount}/root/sign-self-issued`, { body: { certificate: newRoot } });
    assert.equal(r.status, 200, r.text);
    assert.match(r.contentType, /^application\/json/);
    assert.equal(r.json.lease_id, '');
    assert.equal(r.json.lease_duration, 0);
    assert.deepEqual(
      Object.keys(r.json.data).sort(),
      ['certificate', 'issuing_ca'],
      'no serial_number or chain on this path',
    );
    assert.equal(r.json.data.issuing_ca, oldRoot, 'root/ uses the default issuer, still the old root');
    const cross = r.json.data.certificate as string;
    assert.deepEqual(await storedSerials(v, mount), stored, 'a re-signed certificate is not stored');

    // Only the issuer name, the AKI and the distribution points changed.
    const before_ = x509Text(newRoot);
    const after_ = x509Text(cross);
    assert.equal(field(after_, 'Subject'), field(before_, 'Subject'));
    assert.equal(field(after_, 'Issuer'), field(x509Text(oldRoot), 'Subject'));
    assert.notEqual(field(after_, 'Issuer'), field(before_, 'Issuer'));
    assert.equal(openssl(['x509', '-noout', '-serial'], cross), openssl(['x509', '-noout', '-serial'], newRoot));
    assert.deepEqual(validity(cross), validity(newRoot));
    assert.equal(openssl(['x509', '-noout', '-pubkey'], cross), openssl(['x509', '-noout', '-pubkey'], newRoot));
    for (const ext of ['X509v3 Basic Constraints', 'X509v3 Key Usage', 'X509v3 Subject Key Identifier']) {
      assert.ok(extension(before_, ext) !== '', `${ext} in the new root`);
      assert.equal(extension(after_, ext), extension(before_, ext), ext);
    }
    assert.match(extension(after_, 'X509v3 Authority Key Identifier'), new RegExp(keyIdOf(oldRoot)));
    assert.match(after_, /CA Issuers - URI:http:\/\/old\.test\/ca/);
    assert.match(after_, /OCSP - URI:http:\/\/old\.test\/ocsp/);
    assert.match(after_, /URI:http:\/\/old\.test\/crl/);
    assert.doesNotMatch(after_, new RegExp(`ca\\.test/v1/${mount}`), "the new root's own distribution points are gone");
    assert.match(before_, new RegExp(`ca\\.test/v1/${mount}`));

    // Clients that trust only the old root: old leaves still verify; new leaves verify through the cross-signed root.
    assert.match(verifyChain(oldLeaf, [oldRoot]), /OK/);
    assert.match(verifyChain(cross, [oldRoot]), /OK/);
    r = await v('POST', `${mount}/issuer/next/issue/web`, { body: { common_name: 'new.example.com' } });
    assert.equal(r.status, 200, r.text);
    const newLeaf = r.json.data.certificate as string;
    assert.match(verifyChain(newLeaf, [oldRoot], [cross]), /OK/);
    assert.throws(
      () => verifyChain(newLeaf, [oldRoot]),
      'without the cross-signed certificate the old root cannot reach new leaves',
    );
    // Clients that already trust the new root need nothing else.
    assert.match(verifyChain(newLeaf, [newRoot]), /OK/);

    // And the reverse direction, through the per-issuer path: the old root cross-signed by the new one.
    r = await v('POST', `${mount}/issuer/next/sign-self-issued`, { body: { certificate: oldRoot } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuing_ca, newRoot);
    assert.match(verifyChain(oldLeaf, [newRoot], [r.json.data.certificate]), /OK/);
  });

  it('keeps the signature hash for a matching key; require_matching_certificate_algorithms refuses', async () => {
    const { mount: rsaMount, rootPem: rsaRoot } = await mountWithRoot(v, { keyType: 'rsa', keyBits: 2048 });
    const rsaCa = opensslRsaCa('RSA Self CA');
    let r = await v('POST', `${rsaMount}/issuer/default/sign-self-issued`, {
      body: { certificate: rsaCa, require_matching_certificate_algorithms: true },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(x509Text(r.json.data.certificate), /Signature Algorithm: sha512WithRSAEncryption/);
    assert.match(verifyChain(r.json.data.certificate, [rsaRoot]), /OK/);

    const ecCa = opensslRootCa('EC Self CA').certPem;
    r = await v('POST', `${rsaMount}/issuer/default/sign-self-issued`, {
      body: { certificate: ecCa, require_matching_certificate_algorithms: true },
    });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /issuer's key type \(rsa\) does not match the certificate's \(ec\)/);
    r = await v('POST', `${rsaMount}/issuer/default/sign-self-issued`, { body: { certificate: ecCa } });
    assert.equal(r.status, 200, r.text);
    assert.match(
      x509Text(r.json.data.certificate),
      /Signature Algorithm: sha256WithRSAEncryption/,
      "the issuer's default algorithm",
    );
    assert.match(verifyChain(r.json.data.certificate, [rsaRoot]), /OK/);

    const { mount: ecMount, rootPem: ecRoot } = await mountWithRoot(v);
    r = await v('POST', `${ecMount}/root/sign-self-issued`, {
      body: { certificate: rsaCa, require_matching_certificate_algorithms: 'false' },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(x509Text(r.json.data.certificate), /Signature Algorithm: ecdsa-with-SHA256/);
    assert.match(verifyChain(r.json.data.certificate, [ecRoot]), /OK/);
  });

  it('refuses a non-CA, a cert not self-issued, several or no certificates, unknown issuers with 400', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'any', { allow_any_name: true, key_type: 'ec' });
    let r = await v('POST', `${mount}/issue/any`, { body: { common_name: 'leaf.test', ttl: '1h' } });
    const leaf = r.json.data.certificate as string;
    const notCa = opensslRootCa('Self-signed non-CA', { ca: false }).certPem;
    r = await v('POST', `${mount}/intermediate/generate/internal`, { body: { common_name: 'Sub', key_type: 'ec' } });
    r = await v('POST', `${mount}/root/sign-intermediate`, { body: { csr: r.json.data.csr, common_name: 'Sub' } });
    const intermediate = r.json.data.certificate as string;
    const cases: [string, unknown, RegExp][] = [
      ['root/sign-self-issued', { certificate: leaf }, /given certificate is not a CA certificate/],
      ['root/sign-self-issued', { certificate: notCa }, /given certificate is not a CA certificate/],
      ['root/sign-self-issued', { certificate: intermediate }, /given certificate is not self-issued/],
      ['root/sign-self-issued', { certificate: `${rootPem}\n${rootPem}` }, /exactly one certificate/],
      ['root/sign-self-issued', { certificate: '' }, /"certificate" is empty/],
      ['root/sign-self-issued', {}, /"certificate" is empty/],
      [
        'root/sign-self-issued',
        { certificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' },
        /certificate/,
      ],
      ['root/sign-self-issued', { certificate: 'garbage!' }, /certificate|base64/],
      ['issuer/missing/sign-self-issued', { certificate: rootPem }, /unable to find PKI issuer for reference: missing/],
    ];
    for (const [path, body, message] of cases) {
      r = await v('POST', `${mount}/${path}`, { body });
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body).slice(0, 60)}: ${r.text}`);
      assert.equal(r.json.errors.length, 1);
      assert.match(r.json.errors[0], message);
    }
  });

  it('needs sudo on root/sign-self-issued, but not on issuer/:ref/sign-self-issued', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    const token = async (name: string, policy: string): Promise<string> => {
      let r = await v('PUT', `sys/policies/acl/${name}`, { body: { policy } });
      assert.equal(r.status, 204, r.text);
      r = await v('POST', 'auth/token/create', { body: { policies: [name] } });
      assert.equal(r.status, 200, r.text);
      return r.json.auth.client_token as string;
    };
    const plain = await token(
      `plain-${mount}`,
      `path "${mount}/root/sign-self-issued" { capabilities = ["create", "update"] }\npath ` +
        `"${mount}/issuer/+/sign-self-issued" { capabilities = ["update"] }`,
    );
    const sudo = await token(
      `sudo-${mount}`,
      `path "${mount}/root/sign-self-issued" { capabilities = ["update", "sudo"] }`,
    );

    let r = await v('POST', `${mount}/root/sign-self-issued`, { token: plain, body: { certificate: rootPem } });
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { errors: ['permission denied'] });
    r = await v('POST', `${mount}/root/sign-self-issued`, { token: sudo, body: { certificate: rootPem } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuing_ca, rootPem);
    r = await v('POST', `${mount}/issuer/default/sign-self-issued`, { token: plain, body: { certificate: rootPem } });
    assert.equal(r.status, 200, r.text);
    r = await v('POST', `${mount}/issuer/default/sign-self-issued`, { token: sudo, body: { certificate: rootPem } });
    assert.equal(r.status, 403, 'sudo on one path grants nothing on another');
  });
});
