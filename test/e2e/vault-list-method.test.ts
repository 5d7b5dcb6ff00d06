import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { everySplit, RawHttpConnection } from '../support/raw-http.js';
import type { RawResponse } from '../support/raw-http.js';
import { opensslTestCa } from './pki-external-policy-helpers.js';

/**
 * Vault's LIST method, which Node's HTTP parser does not know, reaches the handlers however
 * its bytes arrive: each request and each pipelined pair is fed to a raw socket cut at every
 * byte (and one byte per read), over plain TCP and TLS, and the connection keeps serving
 * afterwards (keep-alive).
 */

const ca = opensslTestCa('Strongroom test CA');
const serverCert = ca.issue('localhost');

for (const secure of [false, true]) {
  describeWithServer(
    `LIST requests over raw ${secure ? 'TLS' : 'TCP'} connections`,
    { config: secure ? { tlsCertFile: serverCert.certFile, tlsKeyFile: serverCert.keyFile } : {} },
    (server) => {
      const head = (method: string, path: string) =>
        Buffer.from(`${method} /v1/${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Vault-Token: ${server.rootToken}\r\n\r\n`);
      const list = () => head('LIST', 'sys/policies/acl');
      const read = () => head('GET', 'sys/policies/acl/alpha');

      before(async () => {
        const c = await open();
        for (const name of ['alpha', 'beta']) {
          const body = JSON.stringify({ policy: 'path "x/*" { capabilities = ["read"] }' });
          await c.send([
            Buffer.from(
              `POST /v1/sys/policies/acl/${name} HTTP/1.1\r\nHost: x\r\nX-Vault-Token: ${server.rootToken}\r\n` +
                `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
            ),
          ]);
          const r = await c.read();
          assert.equal(r.status, 204, r.body);
        }
        c.close();
      });

      const open = () => RawHttpConnection.open(server.url, ca.certFile);

      function assertListed(r: RawResponse, what: string): void {
        assert.equal(r.status, 200, `${what}: ${r.body}`);
        assert.deepEqual(JSON.parse(r.body).data.keys, ['alpha', 'beta', 'default', 'root'], what);
        assert.notEqual(r.headers['connection'], 'close', what);
      }
      function assertRead(r: RawResponse, what: string): void {
        assert.equal(r.status, 200, `${what}: ${r.body}`);
        assert.equal(JSON.parse(r.body).data.name, 'alpha', what);
        assert.notEqual(r.headers['connection'], 'close', what);
      }

      /** Sends `bytes` cut every way; checks the answers in order, then that the connection still serves. */
      async function sweep(bytes: Buffer, check: Array<(r: RawResponse, what: string) => void>): Promise<void> {
        for (const parts of everySplit(bytes)) {
          const what = `cut ${parts.map((p) => JSON.stringify(p.toString('latin1'))).join(' | ')}`;
          const c = await open();
          try {
            await c.send(parts);
            for (const f of check) f(await c.read(), what);
            await c.send([Buffer.concat([list(), read()])]);
            assertListed(await c.read(), `${what}, then LIST again on the same connection`);
            assertRead(await c.read(), `${what}, then GET on the same connection`);
          } finally {
            c.close();
          }
        }
      }

      it('answers a LIST request cut at every byte', async () => {
        await sweep(list(), [assertListed]);
      });

      it('answers a LIST pipelined after a GET, cut at every byte, in order', async () => {
        await sweep(Buffer.concat([read(), list()]), [assertRead, assertListed]);
      });

      it('answers a GET pipelined after a LIST, and two LISTs, cut at every byte, in order', async () => {
        // TLS changes only how the bytes reach the parser, which the sweeps above cover; one pair is enough there.
        if (!secure) await sweep(Buffer.concat([list(), read()]), [assertListed, assertRead]);
        await sweep(Buffer.concat([list(), list()]), [assertListed, assertListed]);
      });

      it('keeps a query string, keeps the connection alive across several LISTs and closes on request', async () => {
        const c = await open();
        try {
          await c.send([head('LIST', 'sys/policies/acl?ignored=1')]);
          assertListed(await c.read(), 'LIST with a query');
          for (let i = 0; i < 3; i++) {
            await c.send([read(), list()]);
            assertRead(await c.read(), `round ${i}`);
            assertListed(await c.read(), `round ${i}`);
          }
          const closing = Buffer.from(
            `LIST /v1/sys/policies/acl HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Vault-Token: ` +
              `${server.rootToken}\r\n\r\n`,
          );
          await c.send([closing]);
          const r = await c.read();
          assert.equal(r.status, 200);
          assert.equal(r.headers['connection'], 'close');
          assert.equal(await c.closedByServer(), true);
        } finally {
          c.close();
        }
      });

      it('refuses a LIST without a token with the Vault envelope, and keeps serving', async () => {
        const c = await open();
        try {
          await c.send([Buffer.from('LIST /v1/sys/policies/acl HTTP/1.1\r\nHost: x\r\n\r\n'), read()]);
          const r = await c.read();
          assert.equal(r.status, 403);
          assert.deepEqual(JSON.parse(r.body), { errors: ['permission denied', 'missing client token'] });
          assertRead(await c.read(), 'GET after the refused LIST');
        } finally {
          c.close();
        }
      });

      it('answers a request it cannot parse with 400 (431 for big headers), after the requests before it', async () => {
        for (const [bad, status] of [
          ['GET /v1/sys/health HTTP/1.1\r\nNo colon here\r\n\r\n', 400],
          [`GET /v1/sys/health HTTP/1.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
        ] as const) {
          const c = await open();
          try {
            await c.send([Buffer.concat([read(), list(), Buffer.from(bad)])]);
            assertRead(await c.read(), 'GET before it');
            assertListed(await c.read(), 'LIST before it');
            assert.equal((await c.read()).status, status);
            assert.equal(await c.closedByServer(), true);
          } finally {
            c.close();
          }
        }
      });

      it('answers a method that only begins like LIST with 400, after the requests before it', async () => {
        for (const bad of [
          'LISTEN /v1/sys/policies/acl HTTP/1.1\r\n\r\n',
          'UNLIST /v1/sys/policies/acl HTTP/1.1\r\n\r\n',
          'LIST /v1/sys/policies/acl HTTP/9.9\r\n\r\n',
        ]) {
          const c = await open();
          try {
            await c.send([Buffer.concat([read(), Buffer.from(bad)])]);
            assertRead(await c.read(), bad);
            assert.equal((await c.read()).status, 400, bad);
            assert.equal(await c.closedByServer(), true, bad);
          } finally {
            c.close();
          }
        }
      });
    },
  );
}
