import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RawJson, stringifyWithRaw } from './raw-json.js';

describe('RawJson', () => {
  const text = '[{"name":"a","count":2},{"name":"b\\u0000","count":1}]';

  it('is spliced into stringifyWithRaw output as it is, wherever it sits', () => {
    const doc = {
      data: { attributes: { resources: new RawJson(text), modules: new RawJson('{}'), name: 'x' } },
      list: [new RawJson('null')],
    };
    const out = stringifyWithRaw(doc);
    assert.equal(out, `{"data":{"attributes":{"resources":${text},"modules":{},"name":"x"}},"list":[null]}`);
    assert.deepEqual(JSON.parse(out), JSON.parse(JSON.stringify(doc)));
  });

  it('gives the same answer through a plain JSON.stringify, by parsing', () => {
    assert.equal(JSON.stringify({ r: new RawJson(text) }), `{"r":${JSON.stringify(JSON.parse(text))}}`);
  });

  it('leaves strings that look like a marker alone', () => {
    const doc = { a: '\u00000', b: '\u0000abc:0', r: new RawJson('[1]') };
    assert.deepEqual(JSON.parse(stringifyWithRaw(doc)), { a: '\u00000', b: '\u0000abc:0', r: [1] });
  });
});
