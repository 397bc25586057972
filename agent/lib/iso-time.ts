// Date.prototype.toISOString's text, from the UTC fields alone. V8 sets up
// its date cache (ICU's time zone and its data) the first time a Date is
// formatted, toISOString included: 0.9 MiB of RSS an idle daemon paid for
// the `at` of each status moment. Reading the UTC fields costs nothing of it.
const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** The same text as `new Date(ms).toISOString()` (a RangeError for a time that is not valid). */
export function isoTime(ms: number): string {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  if (Number.isNaN(y)) throw new RangeError('Invalid time value');
  const year = y >= 0 && y <= 9999 ? pad(y, 4) : `${y < 0 ? '-' : '+'}${pad(Math.abs(y), 6)}`;
  return `${year}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds(), 3)}Z`;
}
