import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { decide, globMatches, parseRules } from './reference-service-rules.js';

const names = (commonName: string, dnsNames: string[] = [], ttlSeconds = 0) => ({
  commonName,
  dnsNames,
  ipSans: [],
  ttlSeconds,
});

describe('reference policy service rules', () => {
  it('matches globs label by label', () => {
    const table: [string, string, boolean][] = [
      ['*.example.com', 'a.example.com', true],
      ['*.example.com', 'A.Example.COM', true],
      ['*.example.com', 'a.b.example.com', false],
      ['*.example.com', 'example.com', false],
      ['example.com', 'example.com', true],
      ['web-*.example.com', 'web-1.example.com', true],
      ['a.example.com', 'axexample.com', false],
    ];
    for (const [p, n, want] of table) assert.equal(globMatches(p, n), want, `${p} ~ ${n}`);
  });

  it('parses the shipped example and rejects malformed rules with a reason', () => {
    const example = parseRules(
      readFileSync(new URL('../../../../docs/examples/external-policy-rules.json', import.meta.url), 'utf8'),
    );
    assert.equal(example.defaultPolicy, 'web');
    assert.deepEqual([...example.policies.keys()], ['web', 'mtls', 'intermediates', 'retired']);
    assert.equal(example.policies.get('web')!.maxTtlSeconds, 720 * 3600);
    const bad: [string, RegExp][] = [
      ['{', /not JSON/],
      ['{"policies":{"a":{"allowed_name":[]}}}', /policy "a": unknown key "allowed_name"/],
      ['{"policies":{"a":{"max_ttl":"soon"}}}', /policy "a"/],
      ['{"policies":{"a":{"issuance_modes":["acme"]}}}', /unknown issuance mode "acme"/],
      ['{"policies":{},"default_policy":"x"}', /default_policy "x" is not defined/],
      ['{"policy":{}}', /unknown top-level key "policy"/],
    ];
    for (const [text, msg] of bad) assert.throws(() => parseRules(text), msg, text);
  });

  it('decides: names, modes, deny, TTL cap and issuer', () => {
    const rules = parseRules(
      JSON.stringify({
        default_policy: 'web',
        policies: {
          web: { allowed_names: ['*.example.com'], ttl: '1h', max_ttl: '2h', warnings: ['w'] },
          pinned: { allowed_names: ['*.example.com'], issuer: 'other' },
          off: { deny: 'closed' },
        },
      }),
    );
    const allowed = decide(rules, '', 'issue', names('a.example.com', ['B.example.com']), 'req-issuer');
    assert.ok(allowed.allow);
    assert.equal(allowed.policy, 'web');
    assert.deepEqual(allowed.dnsNames, ['a.example.com', 'b.example.com']);
    assert.equal(allowed.ttlSeconds, 3600);
    assert.equal(allowed.issuerRef, 'req-issuer');
    assert.deepEqual(allowed.warnings, ['w']);

    const capped = decide(rules, 'web', 'sign', names('a.example.com', [], 5 * 3600), '');
    assert.ok(capped.allow && capped.ttlSeconds === 7200 && capped.warnings.some((w) => /capped/.test(w)));
    const pinned = decide(rules, 'pinned', 'issue', names('a.example.com'), 'req-issuer');
    assert.ok(pinned.allow && pinned.issuerRef === 'other');

    const denials: [string, string, ReturnType<typeof names>, string][] = [
      ['off', 'issue', names('a.example.com'), 'closed'],
      ['nope', 'issue', names('a.example.com'), 'unknown policy "nope"'],
      ['web', 'ica', names('a.example.com'), 'policy "web" does not allow sign-intermediate'],
      ['web', 'issue', names('a.evil.test'), 'name "a.evil.test" is not allowed by policy "web"'],
      ['web', 'issue', names(''), 'the request names nothing to certify (common_name or alt_names)'],
    ];
    for (const [policy, mode, n, message] of denials)
      assert.deepEqual(decide(rules, policy, mode, n, ''), { allow: false, message });
    assert.deepEqual(decide({ ...rules, defaultPolicy: '' }, '', 'issue', names('a.example.com'), ''), {
      allow: false,
      message: 'a policy name is required (external-policy/<op>/<policy>)',
    });
    const withIp = decide(rules, 'web', 'issue', { ...names('a.example.com'), ipSans: ['10.0.0.1'] }, '');
    assert.deepEqual(withIp, { allow: false, message: 'policy "web" does not allow IP SANs' });
  });
});
