// The near miss of a mistyped word among the ones that exist: `statsu` ->
// `status`, `--api-ulr` -> `--api-url`, `apiurl` -> `apiUrl`. One home for
// "did you mean …?" in the agent's messages: commands, options, config keys.

/**
 * Edits between two words: insertions, deletions, substitutions and swaps of
 * two neighbours (optimal string alignment), so `statsu` is 1 from `status`.
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row: number[] = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}

/** Leading dashes do not count: `--api-ulr` is compared as `api-ulr`. */
const bare = (word: string): string => word.replace(/^-+/, '').toLowerCase();

/**
 * The candidate closest to `word` (case and leading dashes aside), when it is
 * close enough to be what was meant: at most one edit in three letters, and
 * never more than 3; the first of equals wins. Undefined when none is.
 */
export function nearMiss(word: string, candidates: Iterable<string>): string | undefined {
  const w = bare(word);
  if (w === '') return undefined;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const b = bare(c);
    const d = editDistance(w, b);
    const allowed = Math.min(3, Math.max(1, Math.floor(Math.max(w.length, b.length) / 3)));
    if (d <= allowed && d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** " (did you mean status?)", or '' when nothing is near: what a usage message puts after the word it refused. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const near = nearMiss(word, candidates);
  return near === undefined ? '' : ` (did you mean ${near}?)`;
}
