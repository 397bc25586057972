// Seeded randomness for the fuzzers. Every case draws from its own PRNG,
// derived from (run seed, case number) alone, so `--seed S --case N` replays
// case N without running the N-1 before it. The generator itself is the
// repo's one seeded PRNG (scripts/lib/seeded-random.mjs, mulberry32).
import { seeded } from '../../../scripts/lib/seeded-random.mjs';

/** A 32-bit mix (murmur3's finalizer) of two integers. */
export function mix(a, b) {
  let h = (a >>> 0) ^ Math.imul((b >>> 0) + 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** FNV-1a of a string: names a stream ("answers for GET /v2/devices/me") inside a case. */
export function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export const caseSeed = (seed, caseNo) => mix(seed, caseNo);

// Taken once: under jest (a vm context) each lookup of the global Math is slow, and bytes() draws MiBs.
const floor = Math.floor;

export class Rng {
  constructor(seed) {
    this.seed = seed >>> 0;
    this.next = seeded(this.seed);
  }

  /** A PRNG of its own for `label`: draws there never shift the draws here. */
  fork(label) {
    return new Rng(mix(this.seed, hashString(String(label))));
  }

  float() {
    return this.next();
  }

  /** Integer in [lo, hi], both inclusive. */
  int(lo, hi) {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p) {
    return this.next() < p;
  }

  pick(list) {
    return list[Math.floor(this.next() * list.length)];
  }

  /** [[weight, value], ...] */
  weighted(pairs) {
    const total = pairs.reduce((n, [w]) => n + w, 0);
    let r = this.next() * total;
    for (const [w, v] of pairs) {
      r -= w;
      if (r < 0) return v;
    }
    return pairs[pairs.length - 1][1];
  }

  hex(n) {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[Math.floor(this.next() * 16)];
    return s;
  }

  bytes(n) {
    const b = Buffer.allocUnsafe(n);
    const next = this.next;
    for (let i = 0; i < n; i++) b[i] = floor(next() * 256);
    return b;
  }

  /** A few of `list`, in random order, without repeats. */
  some(list, min, max) {
    const pool = [...list];
    const n = Math.min(pool.length, this.int(min, max));
    const out = [];
    for (let i = 0; i < n; i++) out.push(pool.splice(Math.floor(this.next() * pool.length), 1)[0]);
    return out;
  }

  /** Text drawn from a hostile alphabet: quotes, control characters, newlines, non-BMP, RTL marks. */
  nastyText(n) {
    const alphabet = ['a', 'Z', '0', ' ', '"', "'", '\\', '\n', '\r', '\t', '\u0000', '\u001b[31m', '\u202e', '\ud83d\ude00', '\ufeff', '%s', '${x}', '<', '>', '&', '\u00e9'];
    let s = '';
    for (let i = 0; i < n; i++) s += this.pick(alphabet);
    return s;
  }
}
