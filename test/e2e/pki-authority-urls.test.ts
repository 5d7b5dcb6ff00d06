/**
 * Authority information in certificates (reference 9.1, 7.6, 16.11): config/urls reaches
 * roots, issued and signed leaves; an issuer's own AIA replaces the mount's; templated URLs
 * are filled from config/cluster and the issuer id. Read back with openssl.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { openssl, verifyChain } from './pki-issuers-openssl.js';
import { makeServerClient, opensslCsr, role } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';

interface Aia {
  ocsp: string[];
  caIssuers: string[];
  crl: string[];
  freshest: string[];
}

/** The URIs of the AIA, CRL Distribution Points and Freshest CRL extensions, as openssl prints them. */
function aiaOf(pem: string): Aia {
  const text = openssl(['x509', '-noout', '-text'], pem);
  const section = (title: string): string => {
    const m = new RegExp(`${title}:[^\\n]*\\n((?:\\s{16,}.*\\n)+)`).exec(text);
    return m ? (m[1] as string) : '';
  };
  const uris = (s: string, prefix = '') =>
    [...s.matchAll(new RegExp(`${prefix}URI:(\\S+)`, 'g'))].map((m) => m[1] as string);
  const aia = section('Authority Information Access');
  return {
    ocsp: uris(aia, 'OCSP - '),
    caIssuers: uris(aia, 'CA Issuers - '),
    crl: uris(section('X509v3 CRL Distribution Points')),
    freshest: uris(section('X509v3 Freshest CRL')),
  };
}

const NONE: Aia = { ocsp: [], caIssuers: [], crl: [], freshest: [] };

describeWithServer('pki authority information in certificates', (server) => {
  let v: Vault;
  let n = 0;
  const newMount = async (): Promise<string> => {
    const m = `aia${++n}`;
    assert.equal(
      (await v('POST', `sys/mounts/${m}`, { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } })).status,
      204,
    );
    return m;
  };
  const root = async (m: string, name: string) => {
    const r = await v('POST', `${m}/root/generate/internal`, {
      body: { common_name: `Root ${name}`, issuer_name: name, key_type: 'ec', ttl: '8760h' },
    });
    assert.equal(r.status, 200, r.text);
    return { pem: r.json.data.certificate as string, id: r.json.data.issuer_id as string };
  };
  const issue = async (m: string, path = 'issue/leaf') => {
    const r = await v('POST', `${m}/${path}`, { body: { common_name: 'leaf.example.com', ttl: '1h' } });
    assert.equal(r.status, 200, r.text);
    return r.json.data.certificate as string;
  };
  before(async () => {
    v = makeServerClient(server);
  });

  it('writes config/urls into roots, issued and signed certs; a partial write keeps the rest; "" clears', async () => {
    const m = await newMount();
    const r = await v('POST', `${m}/config/urls`, {
      body: {
        issuing_certificates: 'http://ca.example/v1/pki/ca',
        crl_distribution_points: ['http://ca.example/v1/pki/crl', 'http://backup.example/crl'],
        ocsp_servers: 'http://ca.example/v1/pki/ocsp',
        delta_crl_distribution_points: 'http://ca.example/v1/pki/crl/delta',
      },
    });
    assert.equal(r.status, 200, r.text);
    const want: Aia = {
      ocsp: ['http://ca.example/v1/pki/ocsp'],
      caIssuers: ['http://ca.example/v1/pki/ca'],
      crl: ['http://ca.example/v1/pki/crl', 'http://backup.example/crl'],
      freshest: ['http://ca.example/v1/pki/crl/delta'],
    };
    const rootCa = await root(m, 'main');
    assert.deepEqual(aiaOf(rootCa.pem), want);
    await role(v, m, 'leaf', { allowed_domains: 'example.com', allow_subdomains: true, key_type: 'ec' });
    const leaf = await issue(m);
    assert.deepEqual(aiaOf(leaf), want);
    assert.match(verifyChain(leaf, [rootCa.pem]), /OK/);
    const signed = await v('POST', `${m}/sign/leaf`, {
      body: { csr: opensslCsr('EC:P-256', '/CN=csr.example.com').csr },
    });
    assert.equal(signed.status, 200, signed.text);
    assert.deepEqual(aiaOf(signed.json.data.certificate), want);

    // Partial write: only OCSP changes; an empty string clears the delta list.
    const p = await v('POST', `${m}/config/urls`, {
      body: { ocsp_servers: 'http://ocsp2.example', delta_crl_distribution_points: '' },
    });
    assert.deepEqual(p.json.data, {
      issuing_certificates: want.caIssuers,
      crl_distribution_points: want.crl,
      ocsp_servers: ['http://ocsp2.example'],
      delta_crl_distribution_points: [],
      enable_templating: false,
    });
    assert.deepEqual((await v('GET', `${m}/config/urls`)).json.data, p.json.data);
    const other = await root(m, 'second');
    await role(v, m, 'leaf2', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      issuer_ref: 'second',
    });
    assert.deepEqual(aiaOf(await issue(m, 'issue/leaf2')), { ...want, ocsp: ['http://ocsp2.example'], freshest: [] });
    assert.deepEqual(aiaOf(other.pem), { ...want, ocsp: ['http://ocsp2.example'], freshest: [] });

    // No URLs at all: no extensions.
    const bare = await newMount();
    await root(bare, 'bare');
    await role(v, bare, 'leaf', { allow_any_name: true, key_type: 'ec' });
    assert.deepEqual(aiaOf(await issue(bare)), NONE);
  });

  it("an issuer's own AIA lists replace the mount's for the certificates it signs", async () => {
    const m = await newMount();
    await v('POST', `${m}/config/urls`, {
      body: {
        issuing_certificates: 'http://global/ca',
        crl_distribution_points: 'http://global/crl',
        ocsp_servers: 'http://global/ocsp',
      },
    });
    await root(m, 'plain');
    await root(m, 'own');
    const p = await v('PATCH', `${m}/issuer/own`, {
      body: { ocsp_servers: 'http://own/ocsp', issuing_certificates: ['http://own/ca'] },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(
      [p.json.data.ocsp_servers, p.json.data.issuing_certificates, p.json.data.crl_distribution_points],
      [['http://own/ocsp'], ['http://own/ca'], []],
    );
    await role(v, m, 'leaf', { allow_any_name: true, key_type: 'ec' });
    assert.deepEqual(aiaOf(await issue(m)), {
      ocsp: ['http://global/ocsp'],
      caIssuers: ['http://global/ca'],
      crl: ['http://global/crl'],
      freshest: [],
    });
    // Once any list of the issuer is set, the mount's lists no longer apply to it (no CRL DP here).
    assert.deepEqual(aiaOf(await issue(m, 'issuer/own/issue/leaf')), {
      ocsp: ['http://own/ocsp'],
      caIssuers: ['http://own/ca'],
      crl: [],
      freshest: [],
    });
  });

  it('fills templated URLs from config/cluster and the issuer id, refusing to issue while they cannot be', async () => {
    const m = await newMount();
    const w = await v('POST', `${m}/config/urls`, {
      body: {
        enable_templating: true,
        issuing_certificates: '{{cluster_aia_path}}/issuer/{{issuer_id}}/der',
        crl_distribution_points: '{{cluster_path}}/issuer/{{issuer_id}}/crl/der',
        ocsp_servers: '{{cluster_path}}/ocsp',
      },
    });
    assert.equal(w.status, 200, w.text);
    assert.ok(
      w.json.warnings.some((x: string) =>
        /unable to template AIA URLs as we lack local cluster address information/.test(x),
      ),
      w.text,
    );
    // Without templating the same values are refused.
    const bad = await v('POST', `${m}/config/urls`, { body: { enable_templating: false } });
    assert.equal(bad.status, 400);
    assert.match(bad.json.errors[0], /invalid URL found in Authority Information Access \(AIA\) parameter/);

    const gen = await v('POST', `${m}/root/generate/internal`, {
      body: { common_name: 'Templated Root', key_type: 'ec', issuer_name: 'main' },
    });
    assert.equal(gen.status, 400);
    assert.match(
      gen.json.errors[0],
      /unable to template AIA URLs as we lack local cluster address information \((aia_)?path\)/,
    );
    assert.equal((await v('LIST', `${m}/issuers`)).status, 404, 'nothing stored');

    assert.equal(
      (
        await v('POST', `${m}/config/cluster`, {
          body: { path: `https://node-a.example/v1/${m}`, aia_path: `http://cdn.example/v1/${m}` },
        })
      ).status,
      200,
    );
    const rootCa = await root(m, 'main');
    await role(v, m, 'leaf', { allow_any_name: true, key_type: 'ec' });
    const want: Aia = {
      ocsp: [`https://node-a.example/v1/${m}/ocsp`],
      caIssuers: [`http://cdn.example/v1/${m}/issuer/${rootCa.id}/der`],
      crl: [`https://node-a.example/v1/${m}/issuer/${rootCa.id}/crl/der`],
      freshest: [],
    };
    assert.deepEqual(aiaOf(rootCa.pem), want);
    assert.deepEqual(aiaOf(await issue(m)), want);
  });
});
