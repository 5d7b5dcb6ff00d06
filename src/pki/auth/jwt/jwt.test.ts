import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkClaims, claimValue, globMatch, updateJwtRole } from './jwt.js';

describe('JWT claim rules', () => {
  it('matches globs', () => {
    for (const [pattern, value, expected] of [
      ['acme/*', 'acme/app', true],
      ['acme/*', 'evil/acme/app', false],
      ['refs/tags/v*', 'refs/tags/v1.2', true],
      ['*', '', true],
      ['a.b', 'axb', false],
      ['repo:acme/*:ref:refs/heads/main', 'repo:acme/x:ref:refs/heads/main', true],
    ] as const)
      assert.equal(globMatch(pattern, value), expected, `${pattern} ~ ${value}`);
  });

  it('reads claims by name and by JSON pointer', () => {
    const claims = { a: 1, 'kubernetes.io': { namespace: 'ci', 'x/y': 2 } };
    assert.equal(claimValue(claims, 'a'), 1);
    assert.equal(claimValue(claims, '/kubernetes.io/namespace'), 'ci');
    assert.equal(claimValue(claims, '/kubernetes.io/x~1y'), 2);
    assert.equal(claimValue(claims, '/missing/deeper'), undefined);
  });

  it('applies leeways, audiences, subject and bound claims', () => {
    const role = updateJwtRole(
      undefined,
      {},
      { user_claim: 'sub', bound_audiences: ['aud-1'], bound_claims: { team: ['blue', 'green'] } },
    );
    const now = new Date('2026-01-01T00:00:00Z');
    const t = now.getTime() / 1000;
    const ok = { sub: 's', aud: ['x', 'aud-1'], team: 'green', exp: t - 100, nbf: t + 100 };
    const id = checkClaims(ok, role, { issuer: '', now, roleName: 'r' });
    assert.deepEqual(id, { alias: 's', metadata: { role: 'r' } });
    const fails: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...ok, exp: t - 211 }, /expired/],
      [{ ...ok, nbf: t + 211 }, /not valid yet/],
      [{ ...ok, aud: 'aud-2' }, /invalid audience/],
      [{ ...ok, team: 'red' }, /does not match any associated bound claim values/],
      [{ ...ok, sub: undefined }, /claim "sub" not found/],
    ];
    for (const [claims, message] of fails)
      assert.throws(() => checkClaims(claims, role, { issuer: '', now, roleName: 'r' }), message);
    const noAud = updateJwtRole(undefined, {}, { user_claim: 'sub' });
    assert.throws(() => checkClaims(ok, noAud, { issuer: '', now, roleName: 'r' }), /no audiences bound/);
  });
});
