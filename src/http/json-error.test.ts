import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jsonErrorOffset, malformedJsonDetail } from './json-error.js';

describe('where a JSON body breaks', () => {
  it('finds the offset of the first character that cannot continue, or the end when it stops short', () => {
    const cases: Array<[string, number]> = [
      ['{"data": ', 9],
      ['{"a":1,}', 7],
      ['{"a" 1}', 5],
      ['abc', 0],
      ['{"a":[1,2}', 9],
      ['{"a":"x\\q"}', 8],
      ['{"a":"\\u12G4"}', 10],
      ['[1] 2', 4],
      ['{\n "a": tru }', 11],
      ['"tab\there"', 4],
      ['{"a": 01}', 7],
    ];
    for (const [text, at] of cases) {
      assert.throws(() => JSON.parse(text), SyntaxError, text);
      assert.equal(jsonErrorOffset(text), at, text);
    }
  });

  it('calls valid JSON valid', () => {
    for (const text of ['{}', '[]', ' {"a":[1,-2.5e3,true,false,null,"\\u00e9\\n"]} ', '"x"', '0']) {
      assert.equal(jsonErrorOffset(text), -1, text);
    }
  });

  it('names the content type, the position with line and column, and what went wrong', () => {
    assert.equal(
      malformedJsonDetail('{\n "a": 1,\n}', 'application/vnd.api+json', 'ignored'),
      "sent as application/vnd.api+json, the body breaks at position 11 (line 3, column 1): unexpected '}'",
    );
    assert.equal(
      malformedJsonDetail('{"a":', undefined, 'ignored'),
      'sent as no content type, the body breaks at position 5 (line 1, column 6): it ends before the JSON value does',
    );
    assert.equal(
      malformedJsonDetail('{"__proto__":{}}', 'application/json', 'Object contains forbidden prototype property'),
      'sent as application/json, the body is refused: Object contains forbidden prototype property',
    );
  });
});
