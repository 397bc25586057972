// A request body, from its text to what a handler checks: the one place the
// local API parses JSON and says what shape a body must have. server.ts
// parses; the handlers take an object from objectBody().
//
// Nesting is bounded before JSON.parse: V8 parses any depth, but describing a
// 100,000-deep value in an error message (JSON.stringify) overflows the stack,
// and that RangeError surfaced as a 500 with an "internal error" about the
// preferences file. An API body is two deep; a deeper one is refused here, so
// no handler ever holds a value it cannot describe.
import { LOCAL_API } from '../lib/timing.js';
import { nestingDepth } from '../lib/json-depth.js';
import { badRequest } from './handlers.js';

/** A body's text as JSON: undefined for an empty body; a 400 for text that is not JSON or nests too deep. */
export function parseJsonBody(text: string, maxDepth: number = LOCAL_API.maxBodyDepth): unknown {
  if (text === '') return undefined;
  if (nestingDepth(text, maxDepth) > maxDepth) throw badRequest(`the request body nests arrays or objects more than ${maxDepth} deep`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw badRequest('the request body is not JSON');
  }
}

/** The body as a JSON object, or a 400; with `optional`, no body at all is an empty object. */
export function objectBody(body: unknown, o: { optional?: boolean } = {}): Record<string, unknown> {
  if (body === undefined && o.optional === true) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the body must be a JSON object');
  return body as Record<string, unknown>;
}
