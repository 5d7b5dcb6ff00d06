import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { dbKinds } from '../../../test/support/test-db.js';
import { startTestServer } from '../../../test/support/test-server.js';
import type { TestServer } from '../../../test/support/test-server.js';
import { DomainError } from '../../shared/errors.js';
import type { Actor } from '../identity/actor.js';
import { StateOutputRepo } from '../state-versions/state-output-repo.js';
import { OUTPUTS_NOT_READY_MESSAGE, StateVersionOutputService } from './state-version-output-service.js';
import { presentOutput } from './state-version-output.js';
import type { OutputView, StateVersionOutput } from './state-version-output.js';

const out = (sensitive: boolean): StateVersionOutput => ({
  id: 'wsout-1',
  stateVersionId: 'sv-1',
  name: 'x',
  sensitive,
  type: 'string',
  detailedType: 'string',
  value: 'v',
});

describe('presentOutput (redaction rules, reference 6.2)', () => {
  const cases: Array<[OutputView, boolean, unknown]> = [
    ['show', true, 'v'],
    ['show', false, 'v'],
    ['version-list', true, 'v'],
    ['version-list', false, 'v'],
    ['current', true, null],
    ['current', false, 'v'],
  ];
  for (const [view, sensitive, value] of cases) {
    it(`${view}, ${sensitive ? 'sensitive' : 'plain'} → ${JSON.stringify(value)}`, () => {
      const o = out(sensitive);
      assert.equal(presentOutput(o, view).value, value);
      assert.equal(o.value, 'v', 'the input is not modified');
    });
  }
});

let admin: Actor;

function state(serial: number, lineage: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      version: 4,
      terraform_version: '1.9.5',
      serial,
      lineage,
      outputs: {
        a: { value: 'one', type: 'string' },
        b: { value: [1, 2], type: ['list', 'number'] },
        c: { value: 'pw', type: 'string', sensitive: true },
      },
      resources: [],
    }),
  );
}

for (const kind of dbKinds()) {
  describe(`StateVersionOutputService [${kind}]`, () => {
    let srv: TestServer;
    let outputs: StateVersionOutputService;
    before(async () => {
      srv = await startTestServer(kind);
      const t = srv.deps.tfe;
      const actor = await t.identity.authenticate(srv.rootToken);
      assert.ok(actor);
      admin = actor;
      outputs = new StateVersionOutputService({
        repo: new StateOutputRepo({ db: srv.deps.core.db.kysely, sealing: srv.deps.core.sealing }),
        versions: t.stateVersions,
        workspaces: t.workspaces,
      });
    });
    after(async () => srv.close());

    async function workspaceWithState(): Promise<{ wsId: string; svId: string }> {
      const t = srv.deps.tfe;
      const org = `o-${randomUUID().slice(0, 8)}`;
      await t.organizations.create(admin, { name: org, email: `${org}@example.com` });
      const ws = await t.workspaces.create(admin, org, { name: 'w' });
      await t.workspaces.lock(admin, ws.workspace.id, 'test');
      const lineage = randomUUID();
      const bytes = state(1, lineage);
      const sv = await t.stateVersions.create(admin, ws.workspace.id, {
        serial: 1,
        md5: createHash('md5').update(bytes).digest('hex'),
        lineage,
        state: bytes.toString('base64'),
        force: false,
        runId: null,
      });
      return { wsId: ws.workspace.id, svId: sv.id };
    }

    it('current() is unavailable until extraction ran, then lists outputs in order, sensitive hidden', async () => {
      const { wsId, svId } = await workspaceWithState();
      await assert.rejects(
        outputs.current(admin, wsId),
        (err: unknown) =>
          err instanceof DomainError && err.kind === 'unavailable' && err.message === OUTPUTS_NOT_READY_MESSAGE,
      );
      await srv.deps.worker.runUntilIdle();
      const cur = await outputs.current(admin, wsId);
      assert.deepEqual(
        cur.map((o) => [o.name, o.value, o.stateVersionId]),
        [
          ['a', 'one', svId],
          ['b', [1, 2], svId],
          ['c', null, svId],
        ],
      );
      const one = await outputs.get(admin, cur[2]?.id as string);
      assert.equal(one.value, 'pw');
      const page = await outputs.listForVersion(admin, svId, { number: 2, size: 2 });
      assert.deepEqual(
        page.items.map((o) => [o.name, o.value]),
        [['c', 'pw']],
      );
      assert.equal(page.totalCount, 3);
    });

    it('hides what does not exist or may not be read behind not_found', async () => {
      const { wsId } = await workspaceWithState();
      await srv.deps.worker.runUntilIdle();
      const stranger: Actor = {
        kind: 'organization',
        organization: 'elsewhere',
        organizationId: 'org-elsewhere',
        tokenId: 'at-x',
      };
      const notFound = (err: unknown) => err instanceof DomainError && err.kind === 'not_found';
      await assert.rejects(outputs.get(admin, 'wsout-nope'), notFound);
      await assert.rejects(outputs.listForVersion(admin, 'sv-nope', { number: 1, size: 20 }), notFound);
      await assert.rejects(outputs.current(admin, 'ws-nope'), notFound);
      await assert.rejects(outputs.current(stranger, wsId), notFound);
      const [first] = await outputs.current(admin, wsId);
      await assert.rejects(outputs.get(stranger, first?.id as string), notFound);
    });
  });
}
