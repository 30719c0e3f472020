/**
 * Rules that keep one key's name from passing for another's. They apply to new
 * names only (create, rename); a lookup by name keeps the older, looser rule so keys named before
 * these rules existed can still be found and deleted.
 *
 * - Invisible characters: Default_Ignorable_Code_Point covers the Hangul fillers U+115F, U+1160,
 *   U+3164 and U+FFA0 that regex classes count as letters, and the zero-width and variation characters.
 * - Compatibility forms (full-width letters, ligatures, superscripts): a name must be its own NFKC
 *   form, so "ｄｅｐｌｏｙ" is refused with the plain spelling suggested rather than stored beside "deploy".
 * - Runs of spaces: "deploy  key" would pass for "deploy key".
 * - Combining marks (which the character rule allows only after a letter, and only of a real script):
 *   the same mark twice in a row, or more than MAX_MARKS in a row, draw over each other.
 * - Mixed scripts (UTS #39 "highly restrictive", per word): a word is in one script, or in one of the
 *   CJK combinations Latin+Han+Hiragana+Katakana, Latin+Han+Bopomofo, Latin+Han+Hangul. So "dеploy"
 *   with a Cyrillic "е" is refused. Digits and other Common characters belong to every script.
 */

import { once } from "./_once.ts";

// The Unicode property patterns are built on first use: V8 parses a pattern's classes when its literal is
// first evaluated (~0.1 ms each here), and a plain name (isPlainName) never needs them.
const INVISIBLE = once(() => /\p{Default_Ignorable_Code_Point}/u);
const MARK = once(() => /\p{M}/u);
/** Marks in a row on one letter: Devanagari needs up to 3 (nukta, vowel sign, anusvara), Tibetan stacks 4. */
const MAX_MARKS = 4;

// Scripts with their own letters; a letter in none of them counts as one "other" script, so two
// unlisted scripts in one word are not told apart (none of the confusable pairs lies there).
const SCRIPT_NAMES = [
  "Latin", "Greek", "Cyrillic", "Armenian", "Georgian", "Cherokee", "Coptic", "Hebrew", "Arabic",
  "Syriac", "Thaana", "Nko", "Devanagari", "Bengali", "Gurmukhi", "Gujarati", "Oriya", "Tamil",
  "Telugu", "Kannada", "Malayalam", "Sinhala", "Thai", "Lao", "Tibetan", "Myanmar", "Khmer",
  "Mongolian", "Ethiopic", "Canadian_Aboriginal", "Tifinagh", "Runic", "Ogham", "Vai", "Yi", "Lisu",
  "Osage", "Adlam", "Han", "Hiragana", "Katakana", "Hangul", "Bopomofo",
];
// Compiled on first use: most callers never check a new name.
let scripts: { name: string; pattern: RegExp }[] | undefined;
const scriptPatterns = () =>
  (scripts ??= SCRIPT_NAMES.map((name) => ({ name, pattern: new RegExp(`\\p{Script=${name}}`, "u") })));
const NEUTRAL = once(() => /[\p{Script=Common}\p{Script=Inherited}]/u);
const ALLOWED_MIXES = [
  ["Latin", "Han", "Hiragana", "Katakana"],
  ["Latin", "Han", "Bopomofo"],
  ["Latin", "Han", "Hangul"],
];

const hex = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;

/** The scripts of a word's characters, Common and Inherited left out. */
function scriptsOf(word: string): Set<string> {
  const found = new Set<string>();
  for (const char of word) {
    if (NEUTRAL().test(char)) continue;
    found.add(scriptPatterns().find((s) => s.pattern.test(char))?.name ?? "other");
  }
  return found;
}

/**
 * ASCII letters, digits and spaces only, as most names are. Such a name has no invisible character, no
 * mark, is its own NFC and NFKC form and is written in one script (Latin, with Common digits), so of the
 * rules here only the one on runs of spaces can refuse it, and none of the Unicode property patterns
 * needs building (a few milliseconds of a CLI start: tests/core/names.test.ts holds both paths to the same verdicts).
 */
export const isPlainName = (name: string): boolean => PLAIN.test(name);
const PLAIN = /^[A-Za-z0-9 ]+$/;

/** Printable ASCII only (an empty text too): it holds no control, format, bidirectional or invisible character. */
export const isPrintableAscii = (text: string): boolean => PRINTABLE_ASCII.test(text);
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

const TWO_SPACES = "API key name must not contain two spaces in a row";

/**
 * Why a new name could be mistaken for another, or null when it is fine. Expects a name that already
 * passed the character rule (letters, digits and spaces, NFC).
 * @example nameLookAlikeProblem("d\u0435ploy") // "API key name must not mix scripts in one word ..."
 */
export function nameLookAlikeProblem(name: string): string | null {
  if (isPlainName(name)) return name.includes("  ") ? TWO_SPACES : null;
  return unicodeLookAlikeProblem(name);
}

/** `nameLookAlikeProblem` by the Unicode rules alone, for any name (exported for the test of the plain path). */
export function unicodeLookAlikeProblem(name: string): string | null {
  const invisible = [...name].find((c) => INVISIBLE().test(c));
  if (invisible) {
    return `API key name must not contain invisible or filler characters (found ${hex(invisible)})`;
  }
  // "deploy  key" passes for "deploy key" in most fonts and tables.
  if (name.includes("  ")) return TWO_SPACES;
  let run = 0;
  let previous = "";
  for (const char of name) {
    run = MARK().test(char) ? run + 1 : 0;
    if (run > MAX_MARKS || (run > 1 && char === previous)) {
      return `API key name must not repeat or pile up combining marks (found ${hex(char)} after ${run - 1} other${run === 2 ? "" : "s"})`;
    }
    previous = char;
  }
  const plain = name.normalize("NFKC");
  if (plain !== name) {
    return `API key name must not contain full-width, ligature or other compatibility characters: write ${JSON.stringify(plain)}`;
  }
  for (const word of name.split(" ")) {
    const scripts = [...scriptsOf(word)];
    if (scripts.length > 1 && !ALLOWED_MIXES.some((mix) => scripts.every((s) => mix.includes(s)))) {
      return `API key name must not mix scripts in one word (${JSON.stringify(word)} mixes ${scripts.join(" and ")}), so that it cannot pass for another name`;
    }
  }
  return null;
}
