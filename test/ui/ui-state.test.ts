/**
 * The web UI's state screens in Debian's Chromium against a real server (SQLite and
 * PostgreSQL): sign in, organizations, workspaces, the timeline, a diff, a version with
 * masked outputs, unlock, a refused and an accepted rollback. Names and values with HTML in
 * them render as text. Screenshots under .tmp/test-results/screenshots/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertAccessible, launchBrowser, screenshot, signIn } from '../support/browser.js';
import type { TestBrowser } from '../support/browser.js';
import { dbKinds } from '../support/test-db.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import {
  call,
  createBody,
  createInline,
  inlineAttrs,
  stateFile,
  workspace,
} from '../e2e/tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from '../e2e/tfe-state-versions-fixture.js';

const HTML_RESOURCE = '<img src=x onerror=alert(2)>';
const HTML_OUTPUT = '<script>alert(1)</script>';

/** Serial 3: serial 2 plus a resource whose name is HTML, in a module. */
function stateWithHtmlName(lineage: string): Buffer {
  const s = JSON.parse(stateFile(3, lineage).toString('utf8'));
  s.resources.push({
    module: 'module.app',
    mode: 'managed',
    type: 'aws_s3_bucket',
    name: HTML_RESOURCE,
    provider: 'provider["registry.terraform.io/hashicorp/aws"]',
    instances: [{ schema_version: 0, attributes: { id: 'b' } }],
  });
  return Buffer.from(JSON.stringify(s));
}

describe('web UI: state screens in Chromium', () => {
  let browser: TestBrowser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => browser?.close());

  for (const kind of dbKinds()) {
    describe(`[${kind}]`, () => {
      let server: TestServer;
      let f: WorkspaceFixture;
      before(async () => {
        server = await startTestServer(kind);
        f = await workspace(server);
        await createInline(server, f, 1);
        await createInline(server, f, 2, { extra: HTML_OUTPUT });
        const bytes = stateWithHtmlName(f.lineage);
        const r = await call(server, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
          body: createBody(inlineAttrs(bytes, 3, f.lineage)),
        });
        assert.equal(r.status, 201, r.text);
        await server.deps.worker.runUntilIdle();
      });
      after(async () => server?.close());

      it('signs in, lists organizations and workspaces with lock holder, serial and search', async () => {
        const { page } = browser;
        await page.goto(`${server.url}/`);
        await page.waitForURL(/\/ui\/sign-in/);
        await screenshot(page, `${kind}-sign-in`);
        await assertAccessible(page, 'sign-in');
        await page.getByLabel('Token', { exact: true }).fill('not-a-token');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('alert').filter({ hasText: 'Neither the state API nor the certificate API' }).waitFor();

        await signIn(page, server.url, server.rootToken);
        await page.getByRole('link', { name: 'State', exact: true }).click();
        await page.getByRole('heading', { name: 'Organizations' }).waitFor();
        await page.getByRole('link', { name: f.org }).click();
        const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: f.wsName }) });
        await row.waitFor();
        const cells = await row.getByRole('cell').allInnerTexts();
        assert.equal(cells[2], 'Locked by site-admin');
        assert.equal(cells[3], '3');
        assert.equal(cells[4], '3');
        await screenshot(page, `${kind}-workspaces`);
        await assertAccessible(page, 'workspaces');
        await page.getByLabel('Search by name').fill('no-such-workspace');
        await page.getByRole('button', { name: 'Search' }).click();
        await page.getByText('No workspace matches.').waitFor();
        await page.getByLabel('Search by name').fill(f.wsName.slice(0, 6));
        await page.getByRole('button', { name: 'Search' }).click();
        await row.waitFor();
      });

      it('shows the timeline and a diff of two chosen versions, HTML names as text', async () => {
        const { page } = browser;
        await page.getByRole('link', { name: f.wsName }).click();
        await page.getByRole('heading', { name: f.wsName }).waitFor();
        const rows = page.getByRole('table', { name: /State versions/ }).getByRole('row');
        await rows.nth(3).waitFor();
        assert.equal(await rows.count(), 4);
        const first = await rows.nth(1).getByRole('cell').allInnerTexts();
        assert.equal(first[1], '3');
        assert.equal(first[2], 'finalized');
        assert.equal(first[3], 'site-admin');
        await screenshot(page, `${kind}-workspace`);
        await assertAccessible(page, 'workspace');
        await page.getByLabel('Select serial 1 to compare').check();
        await page.getByLabel('Select serial 3 to compare').check();
        await page.getByRole('button', { name: 'Compare selected' }).click();
        const summary = page.getByTestId('diff-summary');
        await summary.waitFor();
        assert.match(
          await summary.innerText(),
          /From serial 1 to serial 3: 1 added, 0 removed, 0 changed; outputs 0 added, 0 removed, 1 changed/,
        );
        await page.getByRole('cell', { name: `module.app.aws_s3_bucket.${HTML_RESOURCE}` }).waitFor();
        await page.getByText('Changed: greeting').waitFor();
        await screenshot(page, `${kind}-diff`);
        await assertAccessible(page, 'diff');
      });

      it('shows a version with resources, filters, masked outputs revealed on demand', async () => {
        const { page } = browser;
        await page.getByRole('link', { name: /Back to/ }).click();
        await page.getByRole('link', { name: '2', exact: true }).click();
        await page.getByRole('heading', { name: 'State version 2' }).waitFor();
        await page.getByText(`hello 2${HTML_OUTPUT}`).waitFor();
        assert.equal(await page.getByLabel('sensitive value hidden').count(), 1);
        assert.equal(await page.getByText('s3cr3t').count(), 0);
        await page.getByRole('button', { name: 'Reveal' }).click();
        await page.getByText('s3cr3t').waitFor();
        await page.getByLabel('Type').selectOption('random_pet');
        await page.getByText('1 of 2 resources shown.').waitFor();
        await screenshot(page, `${kind}-version`);
        await assertAccessible(page, 'version');
        await page.goBack();
        await page.getByRole('link', { name: '3', exact: true }).click();
        await page.getByRole('cell', { name: HTML_RESOURCE, exact: true }).waitFor();
        assert.equal(await page.locator('img').count(), 0, 'the resource name did not become an element');
      });

      it('unlocks, refuses a rollback without the lock in words, and rolls back once locked', async () => {
        const { page } = browser;
        await page.getByRole('link', { name: 'Back to the workspace' }).click();
        await page.getByRole('button', { name: 'Unlock', exact: true }).click();
        await page.getByTestId('lock-state').filter({ hasText: 'Unlocked' }).waitFor();
        const serial1 = page.getByRole('row').filter({ has: page.getByRole('link', { name: '1', exact: true }) });
        await serial1.getByRole('button', { name: 'Roll back…' }).click();
        await serial1.getByRole('button', { name: 'Yes, roll back' }).click();
        const refusal = await page.getByRole('alert').innerText();
        assert.match(refusal, /lock/i);
        await page.getByRole('button', { name: 'Lock', exact: true }).click();
        await page.getByTestId('lock-state').filter({ hasText: 'Locked by site-admin' }).waitFor();
        await serial1.getByRole('button', { name: 'Roll back…' }).click();
        await serial1.getByRole('button', { name: 'Yes, roll back' }).click();
        await page.getByText('Rolled back: a new version now holds the state of serial 1.').waitFor();
        const top = page
          .getByRole('table', { name: /State versions/ })
          .getByRole('row')
          .nth(1);
        // The new current version holds serial 1's state (and serial).
        await page.getByText('Page 1 of 1 (4 in all)').waitFor();
        assert.deepEqual((await top.getByRole('cell').allInnerTexts()).slice(1, 3), ['1', 'finalized']);
        await page.setViewportSize({ width: 390, height: 844 });
        await screenshot(page, `${kind}-workspace-phone`);
        await page.setViewportSize({ width: 1280, height: 900 });
        assert.deepEqual(browser.problems, []);
      });
    });
  }
});
