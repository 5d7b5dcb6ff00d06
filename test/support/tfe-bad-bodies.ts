import assert from 'node:assert/strict';
import type { TfeHttp } from './tfe-http.js';

/**
 * Bodies no client should send: not JSON, JSON of every other shape, and JSON:API
 * documents whose members have the wrong types. None may cause a 500; a refusal comes in
 * the JSON:API error envelope (token endpoints, which take no body, may accept some).
 */
export const BAD_BODIES: ReadonlyArray<string | unknown> = [
  '{',
  'not json',
  'null',
  '[]',
  '"text"',
  '42',
  {},
  { data: null },
  { data: [] },
  { data: 'x' },
  { data: { type: 5 } },
  { data: { type: 'nope' } },
  { data: { attributes: [] } },
  { data: { attributes: 'x' } },
  { data: { attributes: { name: 5, description: [], access: {}, 'organization-access': 'all' } } },
  { data: { attributes: { 'organization-access': { 'manage-projects': 'yes' } } } },
  { data: { attributes: { 'expired-at': 'tomorrow' } } },
  { data: { relationships: 'x' } },
  { data: { relationships: { project: { data: { id: 5 } } } } },
  { data: { relationships: { team: [], workspace: { data: 'x' } } } },
  { data: [{ type: 'users', id: 5 }] },
];

/**
 * Sends every bad body to `method path`: no answer is a 5xx, and every refusal is a
 * JSON:API error document whose status matches. Returns the statuses, in BAD_BODIES order.
 */
export async function assertBadBodiesRefused(api: TfeHttp, method: string, path: string): Promise<number[]> {
  const statuses: number[] = [];
  for (const body of BAD_BODIES) {
    const r = await api.call(method, path, typeof body === 'string' ? body : JSON.stringify(body));
    const label = `${method} ${path} with ${typeof body === 'string' ? body : JSON.stringify(body)}`;
    assert.ok(r.status < 500, `${label}: ${r.status} ${r.text}`);
    if (r.status >= 400) {
      assert.match(r.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/, label);
      assert.equal(r.body?.errors?.[0]?.status, String(r.status), `${label}: ${r.text}`);
      // A refused document says where: a 422 points at the member it refuses.
      if (r.status === 422) {
        const pointer: unknown = r.body.errors[0].source?.pointer;
        assert.ok(typeof pointer === 'string' && /^(\/[^/]*)*$/.test(pointer), `${label}: no pointer in ${r.text}`);
      }
    }
    statuses.push(r.status);
  }
  return statuses;
}
