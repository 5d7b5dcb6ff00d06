/**
 * The web UI's PKI screens and `terraform login` in Debian's Chromium against a real server
 * (SQLite and PostgreSQL): a Vault token alone sees only certificates; issuers, keys, role
 * create and edit with the API's validation message, certificate search, the certificate
 * page with revoke, expiring soon, a CSR subject with HTML rendered as text; and the login
 * flow as the CLI drives it (listener on a declared port, PKCE, token exchange) with the
 * browser approving. Screenshots under .tmp/test-results/screenshots/.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { assertAccessible, launchBrowser, screenshot, signIn, signOut } from '../support/browser.js';
import type { TestBrowser } from '../support/browser.js';
import type { Locator } from 'playwright-core';
import { dbKinds } from '../support/test-db.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { makeServerClient, mountWithRoot, role } from '../e2e/pki-issue-helpers.js';
import type { Vault } from '../e2e/pki-issue-helpers.js';
import { csrWith } from '../e2e/pki-privileged-helpers.js';
import { exchange, pkcePair } from '../support/terraform-login.js';

const HTML_CN = '<script>alert(3)</script>';
/** openssl's -subj separates with `/`; a value's own slashes are escaped. */
const slash = (s: string) => s.replaceAll('/', '\\/');

/** Waits until a locator matches `n` elements (a list re-renders once its new page arrives). */
async function waitForCount(l: Locator, n: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((await l.count()) !== n) {
    if (Date.now() > deadline) assert.equal(await l.count(), n);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The CLI's redirect listener on the first free port Terraform may use. */
async function cliListener(): Promise<{ port: number; server: Server; received: Promise<URL> }> {
  let resolve!: (u: URL) => void;
  const received = new Promise<URL>((r) => (resolve = r));
  for (let port = 10000; port <= 10010; port++) {
    const server = createServer((req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/html', connection: 'close' })
        .end('<p>The login information has been received.</p>');
      resolve(new URL(req.url ?? '/', `http://localhost:${port}`));
    });
    const ok = await new Promise<boolean>((r) => {
      server.once('error', () => r(false));
      server.listen(port, '127.0.0.1', () => r(true));
    });
    if (ok) return { port, server, received };
  }
  throw new Error('no free port in 10000-10010');
}

describe('web UI: PKI screens and terraform login in Chromium', () => {
  let browser: TestBrowser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => browser?.close());

  for (const kind of dbKinds()) {
    describe(`[${kind}]`, () => {
      let server: TestServer;
      let v: Vault;
      let mount: string;
      let vaultOnly: string;
      before(async () => {
        server = await startTestServer(kind);
        v = makeServerClient(server);
        ({ mount } = await mountWithRoot(v, { issuerName: 'main' }));
        await role(v, mount, 'web', { allowed_domains: 'example.com', allow_subdomains: true, key_type: 'ec' });
        await role(v, mount, 'any', { allow_any_name: true, enforce_hostnames: false, key_type: 'ec' });
        for (const [cn, ttl] of [
          ['api.example.com', '48h'],
          ['www.example.com', '900h'],
        ]) {
          const r = await v('POST', `${mount}/issue/web`, { body: { common_name: cn, ttl, alt_names: `alt-${cn}` } });
          assert.equal(r.status, 200, r.text);
        }
        const { csr } = csrWith('EC:P-256', `/CN=${slash(HTML_CN)}/O=${slash('<b>Org</b>')}`);
        const s = await v('POST', `${mount}/sign-verbatim/any`, { body: { csr, ttl: '24h' } });
        assert.equal(s.status, 200, s.text);
        const t = await v('POST', 'auth/token/create', { body: { policies: ['root'] } });
        vaultOnly = t.json.auth.client_token;
      });
      after(async () => server?.close());

      it('a Vault token alone sees the certificates, not the state', async () => {
        const { page } = browser;
        await signIn(page, server.url, vaultOnly);
        await page.getByRole('link', { name: 'Certificates', exact: true }).waitFor();
        assert.equal(await page.getByRole('link', { name: 'State', exact: true }).count(), 0);
        await page.getByText('Sign in with a state token').waitFor();
        await signOut(page);
        await signIn(page, server.url, server.rootToken);
      });

      it('lists mounts, issuers with subject and default, keys', async () => {
        const { page } = browser;
        await page.getByRole('link', { name: 'Certificates', exact: true }).click();
        await page.getByRole('link', { name: mount }).click();
        await page.getByRole('link', { name: 'Issuers' }).click();
        const issuer = page.getByRole('row').filter({ hasText: 'main' });
        await issuer.waitFor();
        const text = await issuer.innerText();
        assert.match(text, /default/);
        assert.match(text, new RegExp(`CN=Root ${mount}`));
        assert.match(text, /EC P-256/);
        await screenshot(page, `${kind}-issuers`);
        await assertAccessible(page, 'issuers');
        await page.getByRole('link', { name: 'Keys' }).click();
        await page.getByRole('cell', { name: /^ec/ }).first().waitFor();
      });

      it('creates a role (showing the API validation message first) and edits it', async () => {
        const { page } = browser;
        await page.getByRole('link', { name: 'Roles' }).click();
        await page.getByRole('link', { name: 'web', exact: true }).waitFor();
        await page.getByRole('link', { name: 'New role' }).click();
        await page.getByLabel('Name', { exact: true }).fill('intranet');
        await page.getByLabel('Allowed domains (comma-separated)').fill('corp.example');
        await page.getByLabel('Key type').selectOption('ec');
        await page.getByLabel(/^TTL/).fill('soon');
        await page.getByRole('button', { name: 'Create role' }).click();
        const refusal = await page.getByRole('alert').innerText();
        assert.match(refusal, /ttl/i);
        await page.getByLabel(/^TTL/).fill('72h');
        await page.getByRole('button', { name: 'Create role' }).click();
        await page.getByRole('heading', { name: 'Role intranet' }).waitFor();
        await page.getByLabel('Allow subdomains').check();
        await page.getByRole('button', { name: 'Save role' }).click();
        await page.getByText('Role saved.').waitFor();
        await screenshot(page, `${kind}-role`);
        await assertAccessible(page, 'role');
        const r = await v('GET', `${mount}/roles/intranet`);
        assert.deepEqual(r.json.data.allowed_domains, ['corp.example']);
        assert.equal(r.json.data.allow_subdomains, true);
        assert.equal(r.json.data.ttl, 72 * 3600);
      });

      it('searches the inventory, opens a certificate, revokes it and finds it revoked', async () => {
        const { page } = browser;
        await page.getByRole('link', { name: mount }).click();
        await page
          .getByRole('navigation', { name: 'Mount sections' })
          .getByRole('link', { name: 'Certificates' })
          .click();
        await page.getByLabel('Name contains').fill('example.com');
        await page.getByRole('button', { name: 'Search' }).click();
        const rows = page.getByRole('table', { name: 'Certificates' }).getByRole('row');
        await page.getByRole('link', { name: 'www.example.com' }).waitFor();
        await waitForCount(rows, 3);
        assert.match(await rows.nth(1).innerText(), /api\.example\.com[\s\S]*alt-api\.example\.com[\s\S]*web/);
        await screenshot(page, `${kind}-certificates`);
        await assertAccessible(page, 'certificates');
        await page.getByRole('link', { name: 'api.example.com' }).click();
        await page.getByRole('heading', { name: 'api.example.com' }).waitFor();
        const facts = await page.locator('dl.facts').innerText();
        assert.match(facts, /CN=api\.example\.com/);
        assert.match(facts, /DNS:api\.example\.com, DNS:alt-api\.example\.com/);
        assert.match(facts, /EC P-256/);
        assert.match(await page.getByRole('table', { name: 'Extensions' }).innerText(), /Extended key usage/);
        await page.getByRole('button', { name: 'Revoke…' }).click();
        await page.getByRole('button', { name: 'Yes, revoke' }).click();
        await page.getByTestId('revocation-status').filter({ hasText: 'Revoked on' }).waitFor();
        await screenshot(page, `${kind}-certificate`);
        await assertAccessible(page, 'certificate');
        await page.getByRole('link', { name: mount }).click();
        await page.getByLabel('Revoked').selectOption('true');
        await page.getByRole('button', { name: 'Search' }).click();
        await page.getByText('revoked', { exact: true }).waitFor();
        await waitForCount(rows, 2);
        assert.match(await rows.nth(1).innerText(), /api\.example\.com/);
      });

      it('shows a CSR subject with HTML as text, and what expires soon', async () => {
        const { page } = browser;
        await page.getByLabel('Revoked').selectOption('');
        await page.getByLabel('Name contains').fill('script');
        await page.getByRole('button', { name: 'Search' }).click();
        await page.getByRole('link', { name: HTML_CN }).click();
        await page.getByRole('heading', { name: HTML_CN }).waitFor();
        assert.match(await page.locator('dl.facts').innerText(), /O=<b>Org<\/b>/);
        assert.equal(await page.locator('main b').count(), 0);
        await page.getByRole('link', { name: 'Expiring soon' }).click();
        await page.getByLabel('Within (days)').fill('1');
        await page.getByRole('button', { name: 'Show' }).click();
        await page.getByRole('heading', { name: mount }).waitFor();
        const listed = await page.getByRole('table', { name: 'Certificates' }).innerText();
        assert.match(listed, /<script>alert\(3\)<\/script>/);
        assert.doesNotMatch(listed, /api\.example\.com|www\.example\.com/);
        await screenshot(page, `${kind}-expiring`);
        await assertAccessible(page, 'expiring soon');
      });

      it('approves a terraform login in the browser; the CLI side exchanges the code for a working token', async () => {
        const { page } = browser;
        const cli = await cliListener();
        try {
          const { verifier, challenge } = pkcePair();
          const redirectUri = `http://localhost:${cli.port}/login`;
          const q = new URLSearchParams({
            client_id: 'terraform-cli',
            code_challenge: challenge,
            code_challenge_method: 'S256',
            redirect_uri: redirectUri,
            response_type: 'code',
            state: 'cli-state-1',
          });
          await page.goto(`${server.url}/ui/authorize?${q.toString()}`);
          await page.getByRole('heading', { name: 'Authorize Terraform' }).waitFor();
          await screenshot(page, `${kind}-authorize`);
          await assertAccessible(page, 'authorize');
          await page.getByRole('button', { name: 'Approve' }).click();
          const got = await cli.received;
          await page.getByText('The login information has been received.').waitFor();
          assert.equal(got.pathname, '/login');
          assert.equal(got.searchParams.get('state'), 'cli-state-1');
          const token = await exchange(server.url, {
            grant_type: 'authorization_code',
            code: got.searchParams.get('code') ?? '',
            redirect_uri: redirectUri,
            client_id: 'terraform-cli',
            code_verifier: verifier,
          });
          assert.equal(token.status, 200, JSON.stringify(token.json));
          const me = await fetch(`${server.url}/api/v2/account/details`, {
            headers: { authorization: `Bearer ${token.json.access_token}` },
          });
          assert.equal(me.status, 200);
          assert.equal(
            ((await me.json()) as { data: { attributes: { username: string } } }).data.attributes.username,
            'site-admin',
          );
        } finally {
          cli.server.closeAllConnections();
          cli.server.close();
        }
        assert.deepEqual(browser.problems, []);
        await page.goto(`${server.url}/ui/`);
        await signOut(page);
      });
    });
  }
});
