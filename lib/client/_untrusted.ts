/**
 * Text and JSON from a server are untrusted: a hostile or broken service must not
 * be able to write to the terminal (escape sequences, bidi overrides, line breaks), exhaust memory with
 * a huge answer, or crash the client with an answer of the wrong shape.
 */
import * as v from "valibot";
import { readStreamBounded } from "../core/_bounded-read.ts";

/** The most the client reads of one answer; a key list of 10,000 keys is about 3 MiB. */
export const RESPONSE_LIMIT_BYTES = 4 * 1024 * 1024;

const UNSAFE = /[\p{C}\p{Zl}\p{Zp}]/gu;

/**
 * Server text made safe to print: every control, format (bidi, zero-width), unassigned or line-breaking
 * character is written as a visible `\u{…}` escape, and the text is cut to `max` characters.
 * @example untrustedText("evil\u001b]0;owned\u0007") // "evil\\u{1b}]0;owned\\u{7}"
 */
export function untrustedText(text: string, max = 10_000): string {
  const chars = [...text];
  const cut = chars.length > max ? chars.slice(0, max).join("") + "…" : text;
  return cut.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** A string from the server, escaped. */
export const ServerText = v.pipe(v.string(), v.transform((s) => untrustedText(s)));

/** The envelope of a GraphQL answer; anything else in it is dropped. */
export const GraphQLEnvelope = v.object({
  data: v.optional(v.unknown()),
  errors: v.optional(
    v.array(
      v.object({
        message: v.pipe(v.string(), v.transform((s) => untrustedText(s, 500))),
        path: v.optional(v.array(v.union([ServerText, v.number()]))),
        extensions: v.optional(
          v.looseObject({ code: v.optional(v.pipe(v.unknown(), v.transform((c) => (typeof c === "string" ? c : undefined)))) }),
        ),
      }),
    ),
  ),
});

/**
 * Where and what an answer of the wrong shape got wrong, from our own schema (never the server's text).
 * @example shapeProblem(issues) // "apiKeys.0.name: expected string", "apiKeys.0.id: missing"
 */
export function shapeProblem(issues: readonly v.BaseIssue<unknown>[]): string {
  const issue = issues[0];
  const path = (issue.path ?? []).map((item) => untrustedText(String(item.key), 40)).join(".");
  const what = issue.received === "undefined" ? "missing" : `expected ${untrustedText(issue.expected ?? "another value", 100)}`;
  return `${path || "the answer"}: ${what}`;
}

/**
 * Reads at most `limit` bytes of a body; rejects as soon as more arrive, without buffering them.
 * @example const text = await readBounded(response.body, RESPONSE_LIMIT_BYTES)
 */
export async function readBounded(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string> {
  const text = await readStreamBounded(body, limit);
  if (text === null) throw new RangeError(`the answer is larger than ${limit / 1024 / 1024} MiB`);
  return text;
}
