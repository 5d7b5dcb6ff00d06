import { mkdtempSync } from 'node:fs';
import { after, before, describe } from 'node:test';
import { join } from 'node:path';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../../src/config.js';
import type { Config } from '../../src/config.js';
import { buildDeps } from '../../src/deps.js';
import type { Deps } from '../../src/deps.js';
import type { DatabaseKind } from '../../src/db/database.js';
import type { Clock } from '../../src/shared/clock.js';
import { createDatabaseUrl, dbKinds } from './test-db.js';

export const TEST_ROOT_TOKEN = 'test-root-token';

export interface TestServer {
  url: string;
  app: FastifyInstance;
  deps: Deps;
  config: Config;
  /** The admin token: Vault root under /v1, site admin under /api/v2. */
  rootToken: string;
  close(): Promise<void>;
}

/**
 * Starts the real app on 127.0.0.1 with an ephemeral port and a fresh database of the
 * given kind. Jobs do not run by themselves: call `deps.worker.runUntilIdle()`.
 */
export interface StartOptions {
  config?: Partial<Config>;
  clock?: Clock;
  sameDatabaseAs?: TestServer;
  /** Sees every route as Fastify registers it. */
  onRoute?: (route: RouteOptions) => void;
  /** Storage that exists already (a restored backup): used as it is and left in place at close. */
  existing?: { databaseUrl: string; dataDir: string };
}

export async function startTestServer(kind: DatabaseKind, opts: StartOptions = {}): Promise<TestServer> {
  // A second node of `sameDatabaseAs`: its database and data directory (the master key), dropped by the first.
  const shared = opts.existing
    ? { config: { databaseUrl: opts.existing.databaseUrl, dataDir: opts.existing.dataDir } }
    : opts.sameDatabaseAs;
  const {
    url: databaseUrl,
    dir,
    drop,
  } = shared
    ? { url: shared.config.databaseUrl, dir: shared.config.dataDir, drop: async () => {} }
    : await createDatabaseUrl(kind);
  const dataDir = shared ? shared.config.dataDir : mkdtempSync(join(dir, 'data-'));
  const config = testConfig({
    dataDir,
    databaseUrl,
    databaseKind: kind,
    listenPort: 0,
    dev: true,
    devRootToken: TEST_ROOT_TOKEN,
    runJobWorker: false,
    ...opts.config,
  });
  const deps = await buildDeps(config, opts.clock ? { clock: opts.clock } : {});
  const app = await buildApp(deps, { onRoute: opts.onRoute });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const scheme = config.tlsCertFile ? 'https' : 'http';
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    app,
    deps,
    config: Object.freeze({ ...config, listenPort: port }),
    rootToken: TEST_ROOT_TOKEN,
    async close() {
      await app.close();
      await deps.worker.stop(1000);
      await deps.close();
      await drop();
    },
  };
}

/**
 * A second node on the database (and master key) of `server`, with its own in-process
 * state and caches, as two servers behind a load balancer run. Closing it leaves the
 * database to `server`.
 */
export async function startSecondNode(server: TestServer): Promise<Omit<TestServer, 'config'>> {
  const deps = await buildDeps({ ...server.config, listenPort: 0 });
  const app = await buildApp(deps);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    deps,
    rootToken: server.rootToken,
    async close() {
      await app.close();
      await deps.worker.stop(1000);
      await deps.close();
    },
  };
}

/**
 * One suite per database kind this run covers (`<title> [sqlite]`, `<title> [postgres]`;
 * `[sqlite]` alone for an empty title, inside a suite that names them), each with its own
 * server: started before the suite's tests (and its own `before` hooks), closed after them
 * (and after its own `after` hooks). `body` registers the tests; the server it gets is
 * filled in when the suite starts. `opts` may depend on the kind.
 */
export function describeWithServer(title: string, body: SuiteBody): void;
export function describeWithServer(
  title: string,
  opts: SuiteOptions | ((kind: DatabaseKind) => SuiteOptions),
  body: SuiteBody,
): void;
export function describeWithServer(
  title: string,
  ...args: [SuiteBody] | [SuiteOptions | ((kind: DatabaseKind) => SuiteOptions), SuiteBody]
): void {
  const [opts, body] = args.length === 1 ? [{}, args[0]] : args;
  for (const kind of dbKinds()) {
    const { skip, ...base } = typeof opts === 'function' ? opts(kind) : opts;
    describe(title ? `${title} [${kind}]` : `[${kind}]`, { skip }, () => {
      const server = {} as TestServer;
      let fromBody: ReturnType<SuiteBody> = undefined;
      before(async () => {
        const late = typeof fromBody === 'function' ? await fromBody() : fromBody;
        Object.assign(server, await startTestServer(kind, { ...base, ...late }));
      });
      fromBody = body(server, kind);
      after(async () => server.close?.());
    });
  }
}

/** Start options, and node:test's `skip` for the suite (a reason; false or absent runs it). */
export interface SuiteOptions extends StartOptions {
  skip?: string | boolean;
}

/**
 * Registers a suite's tests. It may return start options made from the suite's own objects
 * (a clock its tests move, a route list the server fills): they are read when the suite starts.
 * Options that can only be made then (from what an enclosing suite's `before` made, or with
 * work that belongs to starting the suite, not to loading the file) come from a function it
 * returns instead, called then.
 */
export type SuiteBody = (
  server: TestServer,
  kind: DatabaseKind,
) => StartOptions | (() => StartOptions | Promise<StartOptions>) | void;
