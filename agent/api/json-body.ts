// An answer's body as JSON, at a cost that does not depend on how deep the
// service (or whatever answers for it) nests it. V8's JSON.parse takes any
// depth, but one body of 400,000 nested arrays, 800 KB and so within the
// transport's 1 MiB cap, takes some 20 MiB of heap to parse, and RSS that is
// given back only slowly: under hostile answers the daemon's RSS peaked at
// 104 to 121 MiB, over the unit's MemoryHigh=96M (docs/benchmarks.md,
// "Memory under hostile answers"). The deepest answer docs/service-api.md
// describes, the Device record, nests three deep (authorization.scopes), so
// an array or object below MAX_JSON_DEPTH is in a field the agent does not
// read: it is parsed as null, its text still checked to be JSON. Text that is not JSON fails as
// JSON.parse fails it (a SyntaxError), deep or not.

import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, nestingDepth, OPEN_BRACE, OPEN_BRACKET, QUOTE } from '../lib/json-depth.js';

/** Arrays and objects deeper than this are parsed as null. */
export const MAX_JSON_DEPTH = 64;

const COMMA = 0x2c; // ,
const COLON = 0x3a; // :
const MINUS = 0x2d; // -


const isWhite = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

class NotJson extends SyntaxError {
  constructor(at: number) {
    super(`Unexpected token in JSON at position ${at}`);
  }
}

/**
 * Checks that `text` is one JSON value (RFC 8259, as JSON.parse reads it) and
 * returns the spans [start, end) of the arrays and objects that begin at
 * depth `max` + 1, outermost only. Allocates nothing per value: the kind of
 * each open container is one bit.
 */
function deepSpans(text: string, max: number, depthBound: number): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  // Bit d: the container at depth d is an object.
  const kinds = new Uint32Array((depthBound >>> 5) + 2);
  let depth = 0;
  let spanStart = -1;
  let i = 0;
  const n = text.length;
  const skipWhite = (): void => {
    while (i < n && isWhite(text.charCodeAt(i))) i++;
  };
  const fail = (): never => {
    throw new NotJson(i);
  };
  const isObject = (d: number): boolean => ((kinds[d >>> 5] as number) & (1 << (d & 31))) !== 0;
  const string = (): void => {
    i++; // the opening quote
    for (;;) {
      if (i >= n) fail();
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        i++;
        return;
      }
      if (c < 0x20) fail();
      if (c === BACKSLASH) {
        const e = text.charCodeAt(i + 1);
        if (e === 0x75) {
          // \uXXXX
          for (let k = 2; k < 6; k++) if (!isHex(text.charCodeAt(i + k))) fail();
          i += 6;
        } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) i += 2;
        else fail();
      } else i++;
    }
  };
  const number = (): void => {
    if (text.charCodeAt(i) === MINUS) i++;
    if (text.charCodeAt(i) === 0x30) i++;
    else if (isDigit(text.charCodeAt(i))) while (isDigit(text.charCodeAt(i))) i++;
    else fail();
    if (text.charCodeAt(i) === 0x2e) {
      i++;
      if (!isDigit(text.charCodeAt(i))) fail();
      while (isDigit(text.charCodeAt(i))) i++;
    }
    const e = text.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      i++;
      const s = text.charCodeAt(i);
      if (s === 0x2b || s === MINUS) i++;
      if (!isDigit(text.charCodeAt(i))) fail();
      while (isDigit(text.charCodeAt(i))) i++;
    }
  };
  const literal = (word: string): void => {
    if (!text.startsWith(word, i)) fail();
    i += word.length;
  };
  /** After a value: a comma and the next member, a closing bracket, or the end. */
  const afterValue = (): 'value' | 'key' | 'closed' | 'end' => {
    for (;;) {
      skipWhite();
      if (depth === 0) return 'end';
      const c = text.charCodeAt(i);
      const obj = isObject(depth);
      if (c === COMMA) {
        i++;
        return obj ? 'key' : 'value';
      }
      if (c !== (obj ? CLOSE_BRACE : CLOSE_BRACKET)) fail();
      i++;
      if (depth === max + 1) spans.push([spanStart, i]);
      depth--;
    }
  };
  let want: 'value' | 'key' | 'closed' | 'end' = 'value';
  for (;;) {
    skipWhite();
    if (want === 'end') {
      if (i !== n) fail();
      return spans;
    }
    if (want === 'key') {
      if (text.charCodeAt(i) !== QUOTE) fail();
      string();
      skipWhite();
      if (text.charCodeAt(i) !== COLON) fail();
      i++;
      want = 'value';
      continue;
    }
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      depth++;
      if (depth === max + 1) spanStart = i;
      const slot = depth >>> 5;
      const bit = 1 << (depth & 31);
      kinds[slot] = c === OPEN_BRACE ? (kinds[slot] as number) | bit : (kinds[slot] as number) & ~bit;
      i++;
      skipWhite();
      const close = c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
      if (text.charCodeAt(i) === close) {
        i++;
        if (depth === max + 1) spans.push([spanStart, i]);
        depth--;
        want = afterValue();
      } else want = c === OPEN_BRACE ? 'key' : 'value';
      continue;
    }
    if (c === QUOTE) string();
    else if (c === MINUS || isDigit(c)) number();
    else if (c === 0x74) literal('true');
    else if (c === 0x66) literal('false');
    else if (c === 0x6e) literal('null');
    else fail();
    want = afterValue();
  }
}

/**
 * JSON.parse of an answer's body, with every array or object nested deeper
 * than `maxDepth` parsed as null. Throws a SyntaxError for text that is not
 * JSON, deep or not.
 */
export function parseJsonBody(body: Buffer | string, maxDepth: number = MAX_JSON_DEPTH): unknown {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (nestingDepth(text, maxDepth) <= maxDepth) return JSON.parse(text) as unknown;
  // No deeper than one open bracket per character.
  const spans = deepSpans(text, maxDepth, text.length);
  let out = '';
  let at = 0;
  for (const [start, end] of spans) {
    out += `${text.slice(at, start)}null`;
    at = end;
  }
  return JSON.parse(out + text.slice(at)) as unknown;
}
