import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_AIA, expandAiaUrls, validateAiaUrls, validateClusterConfig } from './mount-config.js';

describe('mount AIA configuration rules', () => {
  it('requires absolute URLs without templating', () => {
    validateAiaUrls({ ...EMPTY_AIA, issuingCertificates: ['http://a.example.com/ca'] });
    for (const url of ['a.example.com/ca', 'http://', '{{cluster_path}}/ca']) {
      assert.throws(() => validateAiaUrls({ ...EMPTY_AIA, ocspServers: [url] }), /parameter ocsp_servers/, url);
    }
    validateAiaUrls({ ...EMPTY_AIA, enableTemplating: true, ocspServers: ['{{cluster_path}}/ocsp'] });
  });

  it('expands templates and fails when a cluster value is missing', () => {
    const urls = {
      ...EMPTY_AIA,
      enableTemplating: true,
      issuingCertificates: ['{{cluster_aia_path}}/issuer/{{issuer_id}}/der'],
      ocspServers: ['{{cluster_path}}/ocsp'],
    };
    const out = expandAiaUrls(urls, {
      issuerId: 'abc',
      cluster: { path: 'https://v.example.com/v1/pki', aiaPath: 'http://cdn.example.com/pki' },
    });
    assert.deepEqual(out.issuingCertificates, ['http://cdn.example.com/pki/issuer/abc/der']);
    assert.deepEqual(out.ocspServers, ['https://v.example.com/v1/pki/ocsp']);
    assert.throws(
      () => expandAiaUrls(urls, { issuerId: 'abc', cluster: { path: '', aiaPath: 'http://cdn' } }),
      /\(path\)/,
    );
    assert.equal(expandAiaUrls(EMPTY_AIA, { issuerId: 'x', cluster: { path: '', aiaPath: '' } }), EMPTY_AIA);
  });

  it('checks cluster paths', () => {
    validateClusterConfig({ path: '', aiaPath: '' });
    assert.throws(() => validateClusterConfig({ path: 'pki', aiaPath: '' }), /path/);
    assert.throws(() => validateClusterConfig({ path: '', aiaPath: 'cdn/pki' }), /aia_path/);
  });
});
