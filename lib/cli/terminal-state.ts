/**
 * Whether `apikey` may prompt: the terminal's state, found out only when a prompt is needed (so a
 * scripted run never asks the tty), and the usage error that names the flag to pass when it may not.
 */
import { ServiceError } from "../core/errors.ts";

export interface TerminalState {
  /** True when a person can answer prompts (stdin and stdout are terminals). */
  interactive: boolean;
  /** Why prompting is impossible, for the message (default: "stdin is not a terminal"). */
  notInteractiveBecause?: string;
}

/** The terminal's state, or a function that finds it out (called only when a prompt is needed). */
export type ApikeyContext = TerminalState | (() => Promise<TerminalState>);

/** The terminal's state when a prompt is needed: null when a person can answer. */
export async function cannotPrompt(context: ApikeyContext): Promise<TerminalState | null> {
  const state = typeof context === "function" ? await context() : context;
  return state.interactive ? null : state;
}

/** The usage error for a value that would have been asked for: why no prompt, and which flags give it. */
export function missing(what: string, flags: string, context: TerminalState): ServiceError {
  const because = context.notInteractiveBecause ?? "stdin is not a terminal";
  return new ServiceError("USAGE", `Missing ${what}: ${because}, so the command cannot ask for it. Pass ${flags}.`);
}

/** Whether stdin and stdout are terminals; isatty() rather than process.stdin, which would build a stream. */
export async function terminal(): Promise<TerminalState> {
  const { isatty } = await import("node:tty");
  const notInteractiveBecause = !isatty(0) ? "stdin is not a terminal" : !isatty(1) ? "stdout is not a terminal" : undefined;
  return { interactive: !notInteractiveBecause, notInteractiveBecause };
}
