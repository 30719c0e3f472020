/**
 * The prompt the interactive flows ask with at a terminal: text, confirm, select and multi-select,
 * drawn by lib/cli/_screen.ts. Our own, not consola's: consola 3 draws `undefined` for its bars on
 * TERM=linux, marks the cursor row of a multi-select by colour alone (invisible with NO_COLOR),
 * takes no list height, and lets rows wider than the terminal wrap, which breaks its redraw. The
 * @clack/core it is built on is bundled inside consola, not a package we can use.
 * Cancelling (Esc, Ctrl-C, Ctrl-D) resolves to CANCEL, as consola's `cancel: "symbol"` does.
 */
import type { PromptOptions } from "consola";
import process from "node:process";
import { emitKeypressEvents } from "node:readline";
import { type Choice, line, listRows, paint, type Style, styleFor, symbols, wrap } from "./_screen.ts";
import { graphemes } from "./width.ts";

export const CANCEL = Symbol.for("service-api prompt: cancelled");

interface Key {
  name?: string;
  ctrl?: boolean;
  meta?: boolean;
  sequence?: string;
}

export interface Terminal {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
  env: Record<string, string | undefined>;
}

type State = "active" | "done" | "cancel";

/** One question and where its answer stands: the text typed, yes or no, the cursor, the ticked choices. */
interface Question {
  message: string;
  type: NonNullable<PromptOptions["type"]>;
  choices: Choice[];
  text: string;
  yes: boolean;
  cursor: number;
  /** The first list row shown. */
  top: number;
  picked: Set<string>;
}

function question(message: string, options: PromptOptions): Question {
  const type = options.type ?? "text";
  const choices: Choice[] = "options" in options
    ? options.options.map((o) => (typeof o === "string" ? { value: o, label: o } : { value: o.value, label: o.label ?? o.value, hint: o.hint }))
    : [];
  const initial = "initial" in options ? options.initial : undefined;
  return {
    message,
    type,
    choices,
    text: "",
    yes: type === "confirm" ? initial === true : false,
    cursor: type === "select" ? Math.max(0, choices.findIndex((c) => c.value === initial)) : 0,
    top: 0,
    picked: new Set<string>(type === "multiselect" && Array.isArray(initial) ? (initial as string[]) : []),
  };
}

/** The answer as the caller gets it: the text (undefined when empty), yes/no, the chosen value or values. */
function answerOf(q: Question): unknown {
  if (q.type === "text") return q.text === "" ? undefined : q.text;
  if (q.type === "confirm") return q.yes;
  if (q.type === "select") return q.choices[q.cursor]?.value;
  return q.choices.filter((c) => q.picked.has(c.value)).map((c) => c.value);
}

/** The answer as it stays on the screen once given. */
function answerShown(q: Question): string {
  if (q.type === "text") return q.text;
  if (q.type === "confirm") return q.yes ? "Yes" : "No";
  if (q.type === "select") return q.choices[q.cursor]?.label ?? "";
  return q.choices.filter((c) => q.picked.has(c.value)).map((c) => c.label.split("  ")[0].trim()).join(", ") || "none";
}

/** The lines that show the question in `state` on a screen of `columns` x `rows`. */
function frame(q: Question, state: State, style: Style, { columns, rows }: { columns: number; rows: number }): string[] {
  const sym = symbols(style);
  const bar = paint(style, state === "active" ? "cyan" : "gray", sym.bar);
  const head = state === "active" ? paint(style, "cyan", sym.active) : state === "done" ? paint(style, "green", sym.done) : paint(style, "red", sym.cancel);
  const lines = wrap(q.message, columns - 4).map((text, i) => `${i === 0 ? head : bar}  ${text}`);
  if (state !== "active") {
    lines.push(line(style, columns, `${bar}  `, 3, state === "cancel" ? "Cancelled" : answerShown(q), state === "cancel" ? "strike" : "dim"));
    return lines;
  }
  if (q.type === "text") lines.push(line(style, columns, `${bar}  `, 3, `${q.text}`) + paint(style, "inverse", " "));
  else if (q.type === "confirm") {
    const opt = (on: boolean, label: string) => `${on ? sym.on : sym.off} ${label}`;
    lines.push(line(style, columns, `${bar}  `, 3, `${opt(q.yes, "Yes")} / ${opt(!q.yes, "No")}`));
  } else {
    // Room for the list: the screen less the question, the footer and one spare row.
    const height = Math.max(2, rows - lines.length - 2);
    const list = listRows(style, columns, height, { choices: q.choices, cursor: q.cursor, top: q.top, picked: q.type === "multiselect" ? q.picked : undefined });
    q.top = list.top;
    lines.push(...list.rows);
  }
  lines.push(paint(style, "cyan", sym.end));
  return lines;
}

/** Applies one key press to the question; "done" or "cancel" when it ends it. `rows`: the screen's height. */
function press(q: Question, str: string | undefined, key: Key, rows: number): "done" | "cancel" | undefined {
  const name = key.name;
  if (name === "escape" || (key.ctrl && (name === "c" || name === "d"))) return "cancel";
  if (name === "return" || name === "enter") return "done";
  if (q.type === "text") {
    if (name === "backspace") q.text = graphemes(q.text).slice(0, -1).join("");
    else if (str && !key.ctrl && !key.meta && !/[\x00-\x1f\x7f]/.test(str)) q.text += str;
  } else if (q.type === "confirm") {
    if (name === "y" || name === "n") {
      q.yes = name === "y";
      return "done";
    }
    if (["left", "right", "up", "down", "tab", "h", "l", "j", "k"].includes(name ?? "")) q.yes = !q.yes;
  } else if (q.choices.length > 0) {
    moveInList(q, name, rows);
  }
  return undefined;
}

function moveInList(q: Question, name: string | undefined, rows: number): void {
  const last = q.choices.length - 1;
  if (name === "up" || name === "k") q.cursor = q.cursor === 0 ? last : q.cursor - 1;
  else if (name === "down" || name === "j") q.cursor = q.cursor === last ? 0 : q.cursor + 1;
  else if (name === "pageup") q.cursor = Math.max(0, q.cursor - (rows - 6));
  else if (name === "pagedown") q.cursor = Math.min(last, q.cursor + (rows - 6));
  else if (name === "home") q.cursor = 0;
  else if (name === "end") q.cursor = last;
  else if (name === "a" && q.type === "multiselect") {
    // `a` selects all, or none when all are selected already.
    const all = q.picked.size === q.choices.length;
    for (const c of q.choices) all ? q.picked.delete(c.value) : q.picked.add(c.value);
  } else if (name === "space" && q.type === "multiselect") {
    const value = q.choices[q.cursor].value;
    if (q.picked.has(value)) q.picked.delete(value);
    else q.picked.add(value);
  }
}

/** Asks one question at the terminal; resolves to the answer or CANCEL. */
export function ttyPrompt(message: string, options: PromptOptions, term?: Terminal): Promise<unknown> {
  const { input, output, env } = term ?? { input: process.stdin, output: process.stdout, env: process.env };
  const style: Style = styleFor(env, Boolean(output.isTTY));
  const q = question(message, options);
  const size = () => ({ columns: Math.max(20, output.columns || 80), rows: Math.max(6, output.rows || 24) });
  let drawn = 0;
  const draw = (state: State): void => {
    const lines = frame(q, state, style, size());
    const up = drawn > 1 ? `\x1b[${drawn - 1}A` : "";
    output.write(`\r${up}\x1b[J${lines.join("\n")}${state === "active" ? "" : "\n"}`);
    drawn = lines.length;
  };

  return new Promise((resolve) => {
    const raw = Boolean(input.isTTY);
    const onResize = () => draw("active");
    const onKey = (str: string | undefined, key: Key = {}) => {
      const ended = press(q, str, key, size().rows);
      if (!ended) return draw("active");
      input.off("keypress", onKey);
      output.off("resize", onResize);
      draw(ended);
      output.write("\x1b[?25h");
      if (raw) input.setRawMode(false);
      resolve(ended === "cancel" ? CANCEL : answerOf(q));
      input.pause();
    };
    emitKeypressEvents(input);
    if (raw) input.setRawMode(true);
    input.on("keypress", onKey);
    output.on("resize", onResize);
    input.resume();
    output.write("\x1b[?25l");
    draw("active");
  });
}
