// An answer's JSON body with deep values parsed as null (agent/api/json-body.ts):
// the same value and the same failures as JSON.parse for every body the agent
// reads, at a bounded cost for a hostile one (docs/benchmarks.md, "Memory
// under hostile answers").
import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { MAX_JSON_DEPTH, parseJsonBody } from '../../agent/api/json-body.js';

/** JSON.parse's verdict: the value, or 'SyntaxError'. */
const native = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    return (err as Error).name;
  }
};
const ours = (text: string, depth?: number): unknown => {
  try {
    return parseJsonBody(text, depth);
  } catch (err) {
    return (err as Error).name;
  }
};

/** `value` with every array or object deeper than `max` replaced by null. */
function cut(value: unknown, max: number, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth + 1 > max) return null;
  if (Array.isArray(value)) return value.map((v) => cut(v, max, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cut(v, max, depth + 1)]));
}

describe('parseJsonBody', () => {
  test('a body within the depth is what JSON.parse makes of it, Buffer or text', () => {
    const record = { id: 'dev-1', channels: [{ id: 'c', external_index: 0 }], authorization: { scopes: { asset_create: true } }, n: -1.5e-3, s: 'é"\n' };
    expect(parseJsonBody(Buffer.from(JSON.stringify(record)))).toEqual(record);
    expect(parseJsonBody(` ${JSON.stringify(record, null, '\t')}\n`)).toEqual(record);
  });

  test('values deeper than the bound are null, the rest kept', () => {
    expect(parseJsonBody('{"a":[[[[1]]]],"b":2}', 3)).toEqual({ a: [[null]], b: 2 });
    expect(parseJsonBody('{"a":{"b":{"c":{"d":1}}},"e":[{}]}', 3)).toEqual({ a: { b: { c: null } }, e: [{}] });
    expect(parseJsonBody('[[[[]]],[[{}]], [[ { "x" : [ 1 , "]" ] } ]] ]', 2)).toEqual([[null], [null], [null]]);
    expect(parseJsonBody('{"s":"[[[[[[","a":[[[[]]]]}', 2)).toEqual({ s: '[[[[[[', a: [null] });
  });

  test('a 400,000-deep unknown field is cheap and null; the record around it intact', () => {
    const depth = 400_000;
    const body = Buffer.from(`{"x_nested":${'['.repeat(depth)}${']'.repeat(depth)},"id":"dev-1"}`);
    const v = parseJsonBody(body) as { id: string; x_nested: unknown };
    expect(v.id).toBe('dev-1');
    let d = 0;
    for (let x = v.x_nested; Array.isArray(x); x = x[0]) d++;
    expect(d).toBe(MAX_JSON_DEPTH - 1);
  });

  test('deep text that is not JSON fails as JSON.parse fails', () => {
    const bad = [
      '{"a":[[[[1 2]]]]}', '{"a":[[[[1]]]]', '{"a":[[[[1]]]]]}', '{"a":[[[[01]]]]}', '{"a":[[[[1,]]]]}', '{"a":[[[{"k"}]]]}',
      '{"a":[[[{k:1}]]]}', '{"a":[[[["\u0001"]]]]}', '{"a":[[[["\\x"]]]]}', '{"a":[[[[tru]]]]}', '{"a":[[[[1]]]]} x',
      '\ufeff{"a":[[[[1]]]]}', '{"a":[[[[1.]]]]}', '{"a":[[[[-]]]]}', '{"a":[[[[1e]]]]}', '{"a":[[[["\\u12G4"]]]]}',
      '{"a":[[[{"k":1,}]]]}', '{"a":[[[{"k":1]]]]}', '{"a":[[[[NaN]]]]}', '{"a":[[[["x]]]]}', '[[[[',
    ];
    for (const t of bad) {
      expect(native(t)).toBe('SyntaxError');
      expect([t, ours(t, 3)]).toEqual([t, 'SyntaxError']);
    }
  });

  test('property: any JSON text, any bound: JSON.parse of it with the deep values cut', () => {
    fc.assert(
      fc.property(fc.json({ depthSize: 'large', maxDepth: 12 }), fc.integer({ min: 1, max: 8 }), (text, max) => {
        expect(ours(text, max)).toEqual(cut(JSON.parse(text), max));
      }),
      { numRuns: 500 },
    );
  });

  test('property: text that JSON.parse refuses is refused, deep or not', () => {
    const pieces = fc.constantFrom('[', ']', '{', '}', ',', ':', '"a"', '"', '1', '-', '.', 'e', '0', 'true', 'nul', ' ', '\\', '"\\u00', 'x');
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 40 }), fc.integer({ min: 1, max: 4 }), (parts, max) => {
        const text = parts.join('');
        const want = native(text);
        const got = ours(text, max);
        if (want === 'SyntaxError') expect(got).toBe('SyntaxError');
        else expect(got).toEqual(cut(want, max));
      }),
      { numRuns: 3000 },
    );
  });
});
