/**
 * What a leaked secret looks like to a scanner: the regular expression other scanners are given
 * (docs/secret-scanning.md), and the byte-level reader `service-api apikey --scan` uses at each `sapi_`
 * it meets. The reader also follows a secret across a line break (a wrapped line, a string split in
 * two) and through invisible characters (zero-width space and the like, which copy and paste keep),
 * because such a secret is one small edit from working. The checksum decides: without it nothing is
 * reported, so random text, prose about `sapi_` and look-alikes give no false positives.
 */
import { isWellFormedSecret, SECRET_PREFIX } from "./secret.ts";

/** Characters after the prefix: 43 of body and 6 of checksum, base62. */
export const TOKEN_CHARS = 49;

/**
 * The regular expression of a secret, for any scanner (PCRE, RE2, JavaScript, Hyperscan): every
 * secret matches it. Our scanner checks the checksum of each match too; scanners that cannot will
 * report the rare random match.
 */
export const TOKEN_REGEX_SOURCE = `${SECRET_PREFIX}[0-9A-Za-z]{${TOKEN_CHARS}}`;

/** The prefix as bytes, and its last byte, the one a scanner looks for first (`_` is rare in text). */
export const PREFIX_BYTES: Uint8Array = new TextEncoder().encode(SECRET_PREFIX);

/** Line breaks a secret may be split over, at most this many, each with at most GAP_BYTES around it. */
const MAX_BREAKS = 3;
const GAP_BYTES = 24;
/** Invisible characters skipped inside a secret, at most this many. */
const MAX_INVISIBLE = 8;

/** The most bytes a secret can span, prefix included: a chunked reader keeps this many for the next chunk. */
export const MAX_TOKEN_SPAN = PREFIX_BYTES.length + TOKEN_CHARS + MAX_BREAKS * GAP_BYTES + MAX_INVISIBLE * 3;

const isAlnum = (b: number) => (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122);
/** What may surround a line break inside a split secret: blanks, quotes, `+` (string concatenation, diff lines), `\`, `>`, `#`, `*`, `/`, `-`. */
const isGap = (b: number) => b === 10 || b === 13 || b === 32 || b === 9 || b === 34 || b === 39 || b === 43 || b === 92 || b === 62 || b === 35 || b === 42 || b === 47 || b === 45;

/** Bytes of an invisible character at `at` (U+00AD, U+200B-U+200D, U+2060, U+FEFF in UTF-8), or 0. */
function invisibleAt(bytes: Uint8Array, at: number): number {
  const b = bytes[at];
  if (b === 0xc2 && bytes[at + 1] === 0xad) return 2;
  if (b === 0xe2 && bytes[at + 1] === 0x80 && bytes[at + 2] >= 0x8b && bytes[at + 2] <= 0x8d) return 3;
  if (b === 0xe2 && bytes[at + 1] === 0x81 && bytes[at + 2] === 0xa0) return 3;
  if (b === 0xef && bytes[at + 1] === 0xbb && bytes[at + 2] === 0xbf) return 3;
  return 0;
}

/** A secret found in bytes: the secret itself (for hashing only), and whether it was split or disguised. */
export interface TokenAt {
  secret: string;
  /** True when line breaks or invisible characters had to be skipped to read it. */
  split: boolean;
}

/**
 * The secret whose prefix starts at `at` in `bytes[..end]`, or null when there is none (the characters
 * after the prefix do not make a secret with a valid checksum). The caller gives at least
 * MAX_TOKEN_SPAN bytes from `at` unless the input ends sooner.
 * @example tokenAt(new TextEncoder().encode(`k=${secret}`), 2, 100)?.secret === secret // true
 */
export function tokenAt(bytes: Uint8Array, at: number, end: number): TokenAt | null {
  let i = at + PREFIX_BYTES.length;
  let chars = "";
  let breaks = 0;
  let invisible = 0;
  while (chars.length < TOKEN_CHARS && i < end) {
    const b = bytes[i];
    if (isAlnum(b)) {
      chars += String.fromCharCode(b);
      i++;
      continue;
    }
    const skip = invisibleAt(bytes, i);
    if (skip && ++invisible <= MAX_INVISIBLE) {
      i += skip;
      continue;
    }
    if (!isGap(b) || chars.length === 0) return null;
    let j = i;
    let newline = false;
    for (; j < end && j - i < GAP_BYTES && isGap(bytes[j]); j++) if (bytes[j] === 10) newline = true;
    if (!newline || ++breaks > MAX_BREAKS || j >= end || !isAlnum(bytes[j])) return null;
    i = j;
  }
  if (chars.length < TOKEN_CHARS) return null;
  const secret = SECRET_PREFIX + chars;
  return isWellFormedSecret(secret) ? { secret, split: breaks + invisible > 0 } : null;
}

/**
 * A secret as a report shows it: the prefix, two characters, an ellipsis and the last three
 * (`sapi_Gj…1Ga`): enough to tell two leaks apart, too little to help anyone guess it.
 */
export function maskToken(secret: string): string {
  return `${secret.slice(0, SECRET_PREFIX.length + 2)}…${secret.slice(-3)}`;
}
