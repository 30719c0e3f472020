/**
 * The one writer of the CLI's JSON output (`--json`, `--format json`): `JSON.stringify` escapes only the
 * C0 controls and `"` `\`, so a store's text could still carry bidirectional overrides (U+202E), line and
 * paragraph separators (U+2028/2029), C1 controls, zero-width and other format characters to the
 * terminal. Those are written `\uXXXX` (a character beyond U+FFFF as its two surrogates): the same JSON
 * value, which parses back to the same strings, in text that shows what it holds.
 */

import { isPrintableAscii } from "../core/_names.ts";
import { once } from "../core/_once.ts";

/**
 * Control, format, private-use, surrogate and unassigned characters, and the line and paragraph separators.
 * Built on first use: V8 parses the classes when the literal is first evaluated (~0.2 ms of a create), and
 * text of printable ASCII alone holds none of them.
 */
const UNSAFE = once(() => /[\p{C}\p{Zl}\p{Zp}]/gu);

const escape = (c: string) => {
  let out = "";
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
  return out;
};

/**
 * `value` as one line of JSON and a newline, safe to print on a terminal. Outside strings JSON.stringify
 * writes only ASCII punctuation, digits and letters, so the escape touches string contents alone.
 */
export function jsonLine(value: unknown): string {
  const json = JSON.stringify(value);
  return (typeof json === "string" && isPrintableAscii(json) ? json : json.replace(UNSAFE(), escape)) + "\n";
}
