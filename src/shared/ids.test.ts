import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isTfeIdOf, tfeId } from './ids.js';

describe('isTfeIdOf', () => {
  const cases: Array<[string, string, boolean]> = [
    ['run', 'run-AbCdEfGh12345678', true],
    ['run', tfeId('run'), true],
    ['run', 'run-bogus', false],
    ['run', 'run-AbCdEfGh123456789', false],
    ['run', 'run-AbCdEfGh1234567_', false],
    ['run', 'ws-AbCdEfGh12345678', false],
    ['run', 'runAAbCdEfGh12345678', false],
    ['run', '', false],
  ];
  for (const [prefix, id, want] of cases) {
    it(`${prefix} ${JSON.stringify(id)} → ${want}`, () => assert.equal(isTfeIdOf(prefix, id), want));
  }
});
