/**
 * Paths as a scan report prints them. A file name may hold anything but `/` and NUL: a newline (which
 * would forge a line of the report), terminal escape sequences (which would rewrite the screen or the
 * window title), bidirectional overrides, bytes that are not UTF-8. Each is written as an escape
 * (`\n`, `\x1b`, `\u{202e}`, `\xff`), and a backslash as `\\`, so the text shows what the name holds
 * and nothing in it reaches the terminal raw.
 */
import { once } from "../core/_once.ts";

/** Control, format, private-use, surrogate and unassigned characters, the line and paragraph separators, and `\`. */
const UNSAFE = once(() => /[\p{C}\p{Zl}\p{Zp}\\]/gu);

const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\" };

const escapeChar = (c: string) => {
  const code = c.codePointAt(0)!;
  return NAMED[c] ?? (code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`);
};

/** Text with every unsafe character escaped. */
export const printable = (text: string): string => text.replace(UNSAFE(), escapeChar);

/** A path given as bytes (or text) as printable text; bytes that are not UTF-8 are written `\xNN`. */
export function displayPath(path: Uint8Array | string): string {
  if (typeof path === "string") return printable(path);
  let out = "";
  const decoder = new TextDecoder("utf-8", { fatal: true });
  // Decode the longest valid runs; an invalid byte is escaped alone.
  for (let from = 0; from < path.length;) {
    let to = path.length;
    for (; to > from; to = from + Math.max(1, Math.floor((to - from) / 2))) {
      try {
        out += printable(decoder.decode(path.subarray(from, to)));
        break;
      } catch {
        if (to - from === 1) {
          out += `\\x${path[from].toString(16).padStart(2, "0")}`;
          break;
        }
      }
    }
    from = to;
  }
  return out;
}
