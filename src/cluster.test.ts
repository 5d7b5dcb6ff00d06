import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { workerShare } from './cluster.js';
import { testConfig } from './config.js';

describe("the workers' share of the server's bounds", () => {
  const base = testConfig({ dataDir: '/nonexistent' });

  it('shares in-flight requests, uploads and pooled connections out among the workers, rounded up', () => {
    const c = workerShare({ ...base, workers: 3, maxInFlightRequests: 2048, maxConcurrentUploads: 32, pgPoolSize: 10 });
    assert.equal(c.maxInFlightRequests, 683);
    assert.equal(c.maxConcurrentUploads, 11);
    assert.equal(c.pgPoolSize, 4);
    assert.equal(c.workers, 3, 'each worker still knows how many there are');
  });

  it('keeps 0 (no bound) and gives each worker at least 2 connections and 1 upload', () => {
    const c = workerShare({ ...base, workers: 16, maxInFlightRequests: 0, maxConcurrentUploads: 4, pgPoolSize: 10 });
    assert.equal(c.maxInFlightRequests, 0);
    assert.equal(c.maxConcurrentUploads, 1);
    assert.equal(c.pgPoolSize, 2);
  });
});
