import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { vaultResponse, vaultResponseJson } from './vault-envelope.js';

describe('vaultResponseJson', () => {
  const pem = `-----BEGIN CERTIFICATE-----\n${'QUJD'.repeat(100)}\n-----END CERTIFICATE-----`;
  const cases: { name: string; data: unknown; opts?: Parameters<typeof vaultResponse>[1]; repeated?: string[] }[] = [
    { name: 'no data', data: null },
    { name: 'a list answer', data: { keys: ['a', 'b'] } },
    { name: 'an array', data: ['x'] },
    {
      name: 'an issue answer with repeated PEMs, a lease and warnings',
      data: {
        certificate: `${pem}\n`,
        issuing_ca: pem,
        ca_chain: [pem, `${pem}"\\`],
        serial_number: '01:02',
        expiration: 17,
        gone: undefined,
      },
      opts: {
        leaseId: 'pki/issue/web/abc',
        leaseDuration: 3600,
        warnings: ['a "quoted" warning'],
        mountType: 'pki',
        requestId: 'r-1',
      },
      repeated: ['issuing_ca', 'ca_chain', 'not_there'],
    },
    {
      name: 'repeated fields that are not strings',
      data: { issuing_ca: 5, ca_chain: [1, 'x'], other: { nested: true } },
      repeated: ['issuing_ca', 'ca_chain'],
      opts: { auth: { client_token: 't' } },
    },
  ];
  for (const c of cases) {
    it(`is the JSON of the envelope: ${c.name}`, () => {
      const envelope = vaultResponse(c.data, { requestId: 'fixed', ...c.opts });
      for (let round = 0; round < 2; round++) {
        const text = vaultResponseJson(envelope, c.repeated);
        assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(envelope)));
        assert.equal(text, JSON.stringify(envelope));
      }
    });
  }
});
