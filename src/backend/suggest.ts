/**
 * "Did you mean" for misspelt keys, dispatch keys and operator names: the
 * closest candidates by edit distance. Runs only for names that failed to
 * resolve, over a few thousand operator names, so a banded Levenshtein with
 * an early length cut is plenty (well under a millisecond per miss).
 */

/** Levenshtein distance, or `limit + 1` as soon as it must exceed `limit`. */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prev = new Array<number>(b.length + 1);
  let cur = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const cost = ca === b.charCodeAt(j - 1) ? 0 : 1;
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > limit) return limit + 1;
    [prev, cur] = [cur, prev];
  }
  return prev[b.length]!;
}

/**
 * Up to `max` candidates closest to `word`, nearest first (ties: alphabetical).
 * Case differences cost nothing extra beyond one edit, so `privateuse1` finds
 * `PrivateUse1`: we compare lower-cased and break ties on the exact form.
 */
export function suggest(word: string, candidates: Iterable<string>, max = 3): string[] {
  const w = word.toLowerCase();
  // Allow roughly one typo per three characters, at least two: catches
  // transpositions in short names without offering unrelated ones.
  const limit = Math.max(2, Math.floor(w.length / 3));
  const scored: { c: string; d: number }[] = [];
  for (const c of candidates) {
    const lc = c.toLowerCase();
    const d = lc === w ? 0 : editDistance(w, lc, limit);
    if (d <= limit) scored.push({ c, d: d + (c === word ? 0 : lc === w ? 0.5 : 0) });
  }
  scored.sort((x, y) => x.d - y.d || (x.c < y.c ? -1 : x.c > y.c ? 1 : 0));
  return scored.slice(0, max).map((s) => s.c);
}

/** `; did you mean "x"?` / `; did you mean "x" or "y"?`, or "" when nothing is close. */
export function didYouMean(word: string, candidates: Iterable<string>, max = 3): string {
  const s = suggest(word, candidates, max);
  if (s.length === 0) return "";
  const quoted = s.map((x) => `"${x}"`);
  const list = quoted.length === 1 ? quoted[0] : `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
  return `; did you mean ${list}?`;
}
