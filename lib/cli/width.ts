/**
 * Display width in terminal columns, after Unicode's East Asian Width (UAX #11) and emoji
 * presentation: wide and full-width characters and emoji take 2 columns, combining marks and other
 * zero-width characters 0, the rest 1. Counted per grapheme cluster, so an emoji built with ZWJ or a
 * letter with its marks is one unit. A short table of the wide blocks instead of a dependency: the
 * list formatter is on the CLI's start-up path.
 */

// [first, last] code points of the East Asian Wide (W) and Fullwidth (F) blocks.
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], [0x231a, 0x231b], [0x2329, 0x232a], [0x23e9, 0x23ec], [0x2e80, 0x303e],
  [0x3041, 0x33ff], [0x3400, 0x4dbf], [0x4e00, 0x9fff], [0xa000, 0xa4cf], [0xa960, 0xa97f],
  [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe10, 0xfe19], [0xfe30, 0xfe6f], [0xff00, 0xff60],
  [0xffe0, 0xffe6], [0x16fe0, 0x18cff], [0x1b000, 0x1b2ff], [0x1f200, 0x1f2ff], [0x20000, 0x3fffd],
];

const ZERO = /^[\p{Mn}\p{Me}\p{Cf}\p{Cc}]/u;
const EMOJI = /\p{Emoji_Presentation}|\uFE0F/u;

function isWide(code: number): boolean {
  for (const [first, last] of WIDE) {
    if (code < first) return false;
    if (code <= last) return true;
  }
  return false;
}

let segmenter: Intl.Segmenter | undefined;

/** The grapheme clusters of a string (created on first use). */
export function graphemes(text: string): string[] {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  return Array.from(segmenter.segment(text), (part) => part.segment);
}

/** Columns one grapheme cluster takes. */
export function clusterWidth(cluster: string): number {
  if (EMOJI.test(cluster)) return 2;
  if (ZERO.test(cluster)) return 0;
  return isWide(cluster.codePointAt(0)!) ? 2 : 1;
}

/** Columns a string takes on a terminal. ASCII, the common case, skips the segmenter. */
export function displayWidth(text: string): number {
  // deno-lint-ignore no-control-regex
  if (/^[\x20-\x7e]*$/.test(text)) return text.length;
  let width = 0;
  for (const cluster of graphemes(text)) width += clusterWidth(cluster);
  return width;
}

/** Cuts text to at most `width` columns, ending with `ellipsis` ("…" unless given) when something was cut. */
export function truncate(text: string, width: number, ellipsis = "…"): string {
  if (displayWidth(text) <= width) return text;
  const mark = displayWidth(ellipsis);
  if (width < mark) return "";
  let out = "";
  let used = 0;
  for (const cluster of graphemes(text)) {
    const w = clusterWidth(cluster);
    if (used + w > width - mark) break;
    out += cluster;
    used += w;
  }
  return out + ellipsis;
}

/** Pads text with spaces to `width` columns. */
export const padEnd = (text: string, width: number) => text + " ".repeat(Math.max(0, width - displayWidth(text)));
