import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { LazyChildLogger, createLogger } from './log.js';

function capture(level: Parameters<typeof createLogger>[0]) {
  const lines: Record<string, unknown>[] = [];
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger(level, out), lines };
}

describe('LazyChildLogger', () => {
  it('writes what an enabled level logs with the bindings, including those set later', async () => {
    const { logger, lines } = capture('info');
    const log = new LazyChildLogger(logger, { reqId: 'r-1' });
    log.debug('not written');
    log.setBindings({ actor: 'user:alice' });
    log.info({ token: 'secret-token', n: 1 }, 'written');
    log.warn('also written');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      lines.map((l) => l['msg']),
      ['written', 'also written'],
    );
    assert.equal(lines[0]!['reqId'], 'r-1');
    assert.equal(lines[0]!['actor'], 'user:alice');
    assert.equal(lines[0]!['token'], '[redacted]');
    assert.equal(lines[0]!['n'], 1);
  });

  it('makes no pino child while nothing is logged at an enabled level', () => {
    const { logger } = capture('warn');
    let children = 0;
    const counting = Object.create(logger, {
      child: { value: (...a: Parameters<typeof logger.child>) => (children++, logger.child(...a)) },
    }) as typeof logger;
    const log = new LazyChildLogger(counting, { reqId: 'r-2' });
    log.info('quiet');
    log.debug('quiet');
    log.setBindings({ actor: 'x' });
    assert.equal(children, 0);
    assert.equal(log.level, 'warn');
    log.error('loud');
    assert.equal(children, 1);
    log.error('loud again');
    assert.equal(children, 1);
  });

  it('a level set on it applies to it alone', async () => {
    const { logger, lines } = capture('warn');
    const log = new LazyChildLogger(logger, { reqId: 'r-3' });
    log.level = 'debug';
    log.debug('now written');
    logger.debug('parent stays at warn');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      lines.map((l) => l['msg']),
      ['now written'],
    );
  });
});
