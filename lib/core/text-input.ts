/**
 * The schemas of what a person types about a key in words: its name (to look one up, and the stricter
 * rule for a new one) and free text (a description, the reason a key was disabled). Each is stored in
 * clear and listed, so none may hold a secret, and the free text no character that rewrites a terminal.
 */
import * as v from "valibot";
import { containsSecret } from "./secret.ts";
import { isPlainName, isPrintableAscii, nameLookAlikeProblem } from "./_names.ts";
import { once } from "./_once.ts";

export const NAME_MAX = 100;
const DESCRIPTION_MAX = 1000;
const REASON_MAX = 500;

export const NAME_RULE =
  "API key name must contain only letters, numbers, and spaces (Unicode letters are supported)";

// Letters, digits, spaces, and the combining marks scripts such as Devanagari or Tamil are written
// with: a mark must follow a letter (or another mark) and belong to a script of its own. Inherited and
// Common marks (U+0336 long stroke overlay, U+20DD enclosing circle) would draw over any letter, and
// so would enclosing marks of a script (U+0489 Cyrillic millions sign): those are refused.
// Built on first use, as the Unicode property patterns below are: V8 parses a pattern's classes when the
// literal is first evaluated (this one ~0.4-0.8 ms), and a plain ASCII name or description never needs them.
const NAME_CHARS = once(() =>
  /^(?:[\p{L}\p{N} ]|(?<=[\p{L}\p{M}])(?![\p{Script=Inherited}\p{Script=Common}\p{Me}])\p{M})+$/u
);
// C0/C1 controls and bidirectional overrides would let a description rewrite the terminal or a log line.
const UNSAFE_TEXT = once(() => /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u);

/**
 * A name to look a key up by: trimmed, NFC-normalized, letters (any script, with their script's
 * combining marks), digits and spaces, 1 to
 * 100 characters. Looser than `NameSchema`, so keys named before its look-alike rules can still be found.
 */
export const LookupNameSchema: v.GenericSchema<string | undefined, string> = v.pipe(
  v.optional(v.string("API key name must be a string"), ""),
  v.trim(),
  // A plain ASCII name (see isPlainName) is its own NFC form and passes NAME_CHARS: neither is computed for it.
  v.transform((s) => (isPlainName(s) ? s : s.normalize("NFC"))),
  v.nonEmpty("API key name is required"),
  v.check((s) => [...s].length <= NAME_MAX, `API key name must be at most ${NAME_MAX} characters`),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || isPlainName(dataset.value) || NAME_CHARS().test(dataset.value)) return;
    const passing = nameThatPasses(dataset.value);
    addIssue({ message: passing ? `${NAME_RULE}. Try "${passing}"` : NAME_RULE });
  }),
);

/**
 * The name with its other characters (hyphens, underscores, dots, emoji, tabs) turned into single spaces,
 * when that passes the rule: `grafana-reader` gives `grafana reader`. Else null.
 */
function nameThatPasses(name: string): string | null {
  const spaced = name.replace(/[^\p{L}\p{N}\p{M} ]+/gu, " ").replace(/ +/g, " ").trim();
  return spaced !== "" && NAME_CHARS().test(spaced) && nameLookAlikeProblem(spaced) === null && !containsSecret(spaced) ? spaced : null;
}

/** A new key name: the lookup rule, and nothing that could pass for another name (see lib/core/_names.ts). */
export const NameSchema: v.GenericSchema<string | undefined, string> = v.pipe(
  LookupNameSchema,
  v.rawCheck(({ dataset, addIssue }) => {
    const problem = dataset.typed ? nameLookAlikeProblem(dataset.value) : null;
    if (problem) addIssue({ message: problem });
  }),
  // Names are stored in clear and listed: a secret's body pasted here (without `sapi_`) would leak.
  v.check((s) => !containsSecret(s), "API key name must not contain an API key secret: it would be stored in clear"),
);

/**
 * Free text about a key, `what` naming it in each message: trimmed, at most `max` characters, no control
 * or bidirectional-override characters, no secret; blank means none.
 */
function freeTextSchema(what: string, max: number): v.GenericSchema<string | undefined, string | undefined> {
  return v.pipe(
    v.optional(v.string(`${what} must be a string`), ""),
    v.trim(),
    v.check((s) => [...s].length <= max, `${what} must be at most ${max} characters`),
    // Printable ASCII (an empty text too) holds none of them: the Unicode pattern is not built for it.
    v.check((s) => isPrintableAscii(s) || !UNSAFE_TEXT().test(s), `${what} must not contain control or bidirectional-override characters`),
    // Stored in clear and listed: a secret pasted here would leak. The checksum makes this exact.
    v.check((s) => !containsSecret(s), `${what} must not contain an API key secret (sapi_…): it would be stored in clear`),
    v.transform((s) => s || undefined),
  );
}

/** An optional free-text description, at most 1,000 characters; blank means none. */
export const DescriptionSchema: v.GenericSchema<string | undefined, string | undefined> = freeTextSchema("Description", DESCRIPTION_MAX);

/** Why a key was disabled: held to a description's rules (no secret, no control characters), at most 500 characters. */
export const ReasonSchema: v.GenericSchema<string | undefined, string | undefined> = freeTextSchema("Reason", REASON_MAX);
