// A small seeded PRNG (mulberry32): the same seed gives the same run, so a
// simulator story, a failing property test, a fleet or a simulated disk
// replays exactly. Plain JavaScript, so scripts and tests share it.

// Taken once: inside a jest test (a vm context) every lookup of a global such
// as Math goes through the context's interceptors, and three per draw made a
// MiB of fuzzer bytes take a second instead of a few milliseconds.
const imul = Math.imul;

export function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = imul(t ^ (t >>> 15), t | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
