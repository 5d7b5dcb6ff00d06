import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError } from '../shared/errors.js';
import { paginationLinks, paginationMeta, parsePageQuery } from './pagination.js';

describe('pagination', () => {
  const cases = [
    {
      name: 'first page of 45',
      page: { number: 1, size: 20, totalCount: 45 },
      meta: { prev: null, next: 2, pages: 3 },
    },
    { name: 'middle page', page: { number: 2, size: 20, totalCount: 45 }, meta: { prev: 1, next: 3, pages: 3 } },
    { name: 'last page', page: { number: 3, size: 20, totalCount: 45 }, meta: { prev: 2, next: null, pages: 3 } },
    {
      name: 'empty collection',
      page: { number: 1, size: 20, totalCount: 0 },
      meta: { prev: null, next: null, pages: 1 },
    },
    // Out of range: echo the page, keep total-count, and never point next past the end.
    { name: 'page 999', page: { number: 999, size: 100, totalCount: 2 }, meta: { prev: 1, next: null, pages: 1 } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const m = paginationMeta({ items: [], ...c.page });
      assert.deepEqual(m, {
        'current-page': c.page.number,
        'page-size': c.page.size,
        'prev-page': c.meta.prev,
        'next-page': c.meta.next,
        'total-pages': c.meta.pages,
        'total-count': c.page.totalCount,
      });
    });
  }

  it('parses page[number] and page[size] with defaults and the 100 cap', () => {
    assert.deepEqual(parsePageQuery({}), { number: 1, size: 20 });
    assert.deepEqual(parsePageQuery({ 'page[number]': '3', 'page[size]': '500' }), { number: 3, size: 100 });
    assert.throws(() => parsePageQuery({ 'page[number]': '0' }), DomainError);
    assert.throws(() => parsePageQuery({ 'page[size]': 'x' }), DomainError);
    assert.deepEqual(parsePageQuery({ 'page[number]': '2147483647' }), { number: 2147483647, size: 20 });
    assert.throws(() => parsePageQuery({ 'page[number]': '2147483648' }), DomainError);
    assert.throws(() => parsePageQuery({ 'page[number]': '99999999999999999999' }), DomainError);
  });

  it('links keep other parameters and encode the page ones', () => {
    const links = paginationLinks('https://h.example/api/v2/organizations?q=1&page%5Bnumber%5D=2', {
      items: [],
      number: 2,
      size: 20,
      totalCount: 45,
    });
    assert.equal(links.self, 'https://h.example/api/v2/organizations?q=1&page%5Bnumber%5D=2&page%5Bsize%5D=20');
    assert.equal(links.prev, 'https://h.example/api/v2/organizations?q=1&page%5Bnumber%5D=1&page%5Bsize%5D=20');
    assert.equal(links.next, 'https://h.example/api/v2/organizations?q=1&page%5Bnumber%5D=3&page%5Bsize%5D=20');
    assert.equal(links.last, 'https://h.example/api/v2/organizations?q=1&page%5Bnumber%5D=3&page%5Bsize%5D=20');
  });
});
