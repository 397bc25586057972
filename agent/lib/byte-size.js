// Sizes and rates as a person reads them, in one convention for the whole
// agent and the simulator: binary (IEC) units, KiB, MiB, GiB, TiB. Files,
// parts (8 MiB), the queue's cap (4 MiB) and memory figures are all powers
// of two, and `ls -lh`, `du -h` and `df -h` on the camera print binary units:
// an 800 MiB clip reads "800 MiB" here as it does there, never "839 MB".
//
// Plain JavaScript with no imports (types in byte-size.d.ts), so that the
// simulator's scripts (scripts/sim/, plain .mjs run without a build step)
// import this very file: one home for the formatter.

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'];

/** "512 B", "4.5 MiB", "839 MiB", "1.2 GiB": one decimal under 10, whole numbers above. */
export function formatBytes(n) {
  if (!Number.isFinite(n) || n < 1024) return `${Math.round(Number.isFinite(n) ? n : 0)} B`;
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  // 1023.7 KiB rounds to "1024 KiB": say it in the next unit instead.
  if (Math.round(v) >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v < 9.95 ? v.toFixed(1) : Math.round(v)} ${UNITS[u]}`;
}

/** "4.5 MiB/s". */
export function formatRate(bytesPerSecond) {
  return `${formatBytes(bytesPerSecond)}/s`;
}
