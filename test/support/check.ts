// Checks for the hot loops of model and property tests. Each `expect()` call
// costs tens of microseconds before its matcher runs: jest builds every
// matcher six ways (plain, not, resolves, rejects) and an assertion Error
// with its stack, per call (node_modules/expect/build/index.js, `expect`).
// The outbox model checks a few hundred thousand facts a run and spent half
// its CPU there. These test the fact plainly and hand it to jest's matcher
// only when it fails, so a failure reads exactly as jest's own.
import { expect } from '@jest/globals';
import { isDeepStrictEqual } from 'node:util';

/** `expect(actual).toEqual(expected)`. Strict deep equality implies toEqual, so a pass here is a pass there. */
export function checkEqual(actual: unknown, expected: unknown): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual).toEqual(expected);
}

/** `expect(actual).toBe(expected)`. */
export function checkIs(actual: unknown, expected: unknown): void {
  if (!Object.is(actual, expected)) expect(actual).toBe(expected);
}

/** `expect(actual).toBeLessThanOrEqual(limit)`. */
export function checkAtMost(actual: number, limit: number): void {
  if (!(actual <= limit)) expect(actual).toBeLessThanOrEqual(limit);
}

/** `expect(actual).toBeGreaterThanOrEqual(floor)`. */
export function checkAtLeast(actual: number, floor: number): void {
  if (!(actual >= floor)) expect(actual).toBeGreaterThanOrEqual(floor);
}
