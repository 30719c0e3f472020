/**
 * Typed questions over a consola-style `prompt(message, options)` function, with one cancellation
 * rule: Ctrl-C, Esc or end of input (Ctrl-D) at any question becomes `ServiceError("CANCELLED")`
 * (exit 130), and text asked again until it passes a valibot schema. Private to the interactive flows
 * (lib/cli/prompts.ts, _ask-access.ts); the prompt function is injectable so tests can script the answers.
 */
import type { PromptOptions } from "consola";
import * as v from "valibot";
import process from "node:process";
import { ServiceError } from "../core/errors.ts";
import { ttyPrompt } from "./_tty-prompt.ts";

/** consola's `prompt` signature (which ours keeps), as far as we use it. Cancelling resolves to a symbol or rejects. */
export type PromptFn = (message: string, options: PromptOptions) => Promise<unknown>;

export interface Choice<T extends string = string> {
  value: T;
  label: string;
  hint?: string;
}

/** The questions the interactive flows ask. Each rejects with CANCELLED when the person cancels. */
export interface Ask {
  /** Free text; an empty answer is `""`. */
  text(message: string): Promise<string>;
  confirm(message: string, initial?: boolean): Promise<boolean>;
  select<T extends string>(message: string, choices: Choice<T>[], initial?: T): Promise<T>;
  /** Any number of choices, in the order offered. */
  multiselect<T extends string>(message: string, choices: Choice<T>[], initial?: T[]): Promise<T[]>;
}

export const CANCELLED_MESSAGE = "Cancelled; nothing was changed";

/** Our terminal prompt (lib/cli/_tty-prompt.ts: why not consola's), on stdin and stdout. */
const terminalPrompt: PromptFn = (message, options) => ttyPrompt(message, options);

const cancelled = (cause?: unknown) => new ServiceError("CANCELLED", CANCELLED_MESSAGE, { cause });

/** The input a prompt reads, as far as noticing its end goes. */
export interface PromptInput {
  on(event: "pause" | "end" | "close", listener: () => void): unknown;
  off(event: "pause" | "end" | "close", listener: () => void): unknown;
}

export interface AskOptions {
  /** Watched for end of input while a question is open: process.stdin with consola's prompt. */
  input?: PromptInput;
  /** Where the cursor is shown again after end of input (the prompt hid it): process.stdout with consola's prompt. */
  output?: { isTTY?: boolean; write(text: string): unknown };
}

/**
 * Rejects with CANCELLED when input ends while a question is open. consola's prompt never settles
 * then: Ctrl-D closes its readline (which pauses the input) or stdin ends, nothing is left to wait
 * for, and Node would exit 0 with no output. Checked a turn later, so a prompt that pauses the
 * input as it submits has settled first; `beforeExit` catches any other way the wait goes idle.
 */
function endOfInput(options: AskOptions): { ended: Promise<never>; stop: () => void } {
  const { input, output } = options;
  let stopped = false;
  let reject!: (error: unknown) => void;
  const ended = new Promise<never>((_, no) => (reject = no));
  ended.catch(() => {}); // settled after the answer won the race: not unhandled
  const check = () =>
    setTimeout(() => {
      if (stopped) return;
      stop();
      if (output?.isTTY) output.write("\x1b[?25h\n"); // cursor back, off the prompt's line
      reject(cancelled());
    }, 0);
  const stop = () => {
    stopped = true;
    for (const event of ["pause", "end", "close"] as const) input?.off(event, check);
    process.off("beforeExit", check);
  };
  for (const event of ["pause", "end", "close"] as const) input?.on(event, check);
  process.on("beforeExit", check);
  return { ended, stop };
}

/** Wraps a prompt function into typed questions. */
export function createAsk(prompt: PromptFn = terminalPrompt, options?: AskOptions): Ask {
  const watch = options ?? (prompt === terminalPrompt ? { input: process.stdin, output: process.stdout } : {});
  const ask = async (message: string, promptOptions: PromptOptions): Promise<unknown> => {
    let answer: unknown;
    const { ended, stop } = endOfInput(watch);
    try {
      answer = await Promise.race([prompt(message, { ...promptOptions, cancel: "symbol" }), ended]);
    } catch (error) {
      // consola's `cancel: "reject"` mode, should a custom prompt function use it.
      if (error instanceof Error && error.name === "ConsolaPromptCancelledError") throw cancelled(error);
      throw error;
    } finally {
      stop();
    }
    if (typeof answer === "symbol") throw cancelled();
    return answer;
  };
  const known = <T extends string>(choices: Choice<T>[], value: unknown): value is T =>
    choices.some((choice) => choice.value === value);

  return {
    // An empty answer resolves to undefined, as with consola's prompt.
    text: async (message) => String((await ask(message, { type: "text" })) ?? ""),
    confirm: async (message, initial = false) => (await ask(message, { type: "confirm", initial })) === true,
    select: async (message, choices, initial) => {
      const answer = await ask(message, { type: "select", options: choices, initial });
      if (!known(choices, answer)) throw new ServiceError("INTERNAL", `Unexpected answer to "${message}"`);
      return answer;
    },
    multiselect: async (message, choices, initial) => {
      const answer = await ask(message, { type: "multiselect", options: choices, initial, required: false });
      const picked = Array.isArray(answer) ? answer : [];
      return choices.map((choice) => choice.value).filter((value) => picked.includes(value));
    },
  };
}

/** How to answer a multiselect, in its question. */
export const TOGGLE = "space to select, enter to confirm";

/** The first problem valibot finds, or the parsed value. */
function check<const S extends v.GenericSchema>(schema: S, input: unknown): { value: v.InferOutput<S> } | { problem: string } {
  const result = v.safeParse(schema, input, { abortEarly: true });
  return result.success ? { value: result.output } : { problem: result.issues[0].message };
}

/** Puts the problem with the last answer on the line above the question. */
export const withProblem = (question: string, problem?: string) => (problem ? `${problem}\n${question}` : question);

/** Asks until the answer passes the schema, showing the rule the last answer broke. */
export async function askValid<const S extends v.GenericSchema>(ask: Ask, schema: S, question: string, problem?: string) {
  for (;;) {
    const checked = check(schema, await ask.text(withProblem(question, problem)));
    if ("value" in checked) return checked.value as v.InferOutput<S>;
    problem = checked.problem;
  }
}
