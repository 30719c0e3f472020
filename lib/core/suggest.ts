/**
 * "Did you mean": the closest known word to a mistyped command or flag, by edit distance, so that
 * `--crate` points at `--create` and `apikye` at `apikey`.
 */

/** Levenshtein distance, with a swap of two neighbours counted as one edit (`apikye`). */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1);
    }
  }
  return rows[a.length][b.length];
}

/**
 * The known word closest to `word`, if it is close enough to be a typo (at most a third of its
 * length, and at least one edit allowed); otherwise undefined.
 * @example suggest("--crate", ["--create", "--delete"]) // "--create"
 */
export function suggest(word: string, known: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(word.replace(/^-+/, "").length / 3));
  let best: { word: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { word: candidate, distance };
  }
  return best?.word;
}

/** " Did you mean `x`?" or nothing. */
export const didYouMean = (word: string, known: readonly string[]): string => {
  const match = suggest(word, known);
  return match ? ` Did you mean '${match}'?` : "";
};
