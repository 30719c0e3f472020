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

/** Asks one question at the terminal; resolves to the answer or CANCEL. */
export function ttyPrompt(message: string, options: PromptOptions, term?: Terminal): Promise<unknown> {
  const { input, output, env } = term ?? { input: process.stdin, output: process.stdout, env: process.env };
  const style: Style = styleFor(env, Boolean(output.isTTY));
  const sym = symbols(style);
  const type = options.type ?? "text";
  const choices: Choice[] = "options" in options
    ? options.options.map((o) => (typeof o === "string" ? { value: o, label: o } : { value: o.value, label: o.label ?? o.value, hint: o.hint }))
    : [];
  const initial = "initial" in options ? options.initial : undefined;
  let text = "";
  let yes = type === "confirm" ? initial === true : false;
  let cursor = type === "select" ? Math.max(0, choices.findIndex((c) => c.value === initial)) : 0;
  const picked = new Set<string>(type === "multiselect" && Array.isArray(initial) ? (initial as string[]) : []);
  let top = 0;
  let drawn = 0;

  const size = () => ({ columns: Math.max(20, output.columns || 80), rows: Math.max(6, output.rows || 24) });

  function frame(state: State): string[] {
    const { columns, rows } = size();
    const bar = paint(style, state === "active" ? "cyan" : "gray", sym.bar);
    const head = state === "active" ? paint(style, "cyan", sym.active) : state === "done" ? paint(style, "green", sym.done) : paint(style, "red", sym.cancel);
    const lines = wrap(message, columns - 4).map((text, i) => `${i === 0 ? head : bar}  ${text}`);
    if (state !== "active") {
      const answer = type === "text"
        ? text
        : type === "confirm"
        ? (yes ? "Yes" : "No")
        : type === "select"
        ? choices[cursor]?.label ?? ""
        : choices.filter((c) => picked.has(c.value)).map((c) => c.label.split("  ")[0].trim()).join(", ") || "none";
      lines.push(line(style, columns, `${bar}  `, 3, state === "cancel" ? "Cancelled" : answer, state === "cancel" ? "strike" : "dim"));
      return lines;
    }
    if (type === "text") lines.push(line(style, columns, `${bar}  `, 3, `${text}`) + paint(style, "inverse", " "));
    else if (type === "confirm") {
      const opt = (on: boolean, label: string) => `${on ? sym.on : sym.off} ${label}`;
      lines.push(line(style, columns, `${bar}  `, 3, `${opt(yes, "Yes")} / ${opt(!yes, "No")}`));
    } else {
      // Room for the list: the screen less the question, the footer and one spare row.
      const height = Math.max(2, rows - lines.length - 2);
      const list = listRows(style, columns, height, { choices, cursor, top, picked: type === "multiselect" ? picked : undefined });
      top = list.top;
      lines.push(...list.rows);
    }
    lines.push(paint(style, "cyan", sym.end));
    return lines;
  }

  function draw(state: State): void {
    const lines = frame(state);
    const up = drawn > 1 ? `\x1b[${drawn - 1}A` : "";
    output.write(`\r${up}\x1b[J${lines.join("\n")}${state === "active" ? "" : "\n"}`);
    drawn = lines.length;
  }

  return new Promise((resolve) => {
    const raw = Boolean(input.isTTY);
    const finish = (state: "done" | "cancel", value: unknown) => {
      input.off("keypress", onKey);
      output.off("resize", onResize);
      draw(state);
      output.write("\x1b[?25h");
      if (raw) input.setRawMode(false);
      resolve(value);
      input.pause();
    };
    const onResize = () => draw("active");
    const move = (by: number) => (cursor = (cursor + by + choices.length) % choices.length);
    const onKey = (str: string | undefined, key: Key = {}) => {
      const name = key.name;
      if (name === "escape" || (key.ctrl && (name === "c" || name === "d"))) return finish("cancel", CANCEL);
      if (name === "return" || name === "enter") {
        const value = type === "text"
          ? (text === "" ? undefined : text)
          : type === "confirm"
          ? yes
          : type === "select"
          ? choices[cursor]?.value
          : choices.filter((c) => picked.has(c.value)).map((c) => c.value);
        return finish("done", value);
      }
      if (type === "text") {
        if (name === "backspace") text = graphemes(text).slice(0, -1).join("");
        else if (str && !key.ctrl && !key.meta && !/[\x00-\x1f\x7f]/.test(str)) text += str;
      } else if (type === "confirm") {
        if (name === "y" || name === "n") {
          yes = name === "y";
          return finish("done", yes);
        }
        if (["left", "right", "up", "down", "tab", "h", "l", "j", "k"].includes(name ?? "")) yes = !yes;
      } else if (choices.length > 0) {
        if (name === "up" || name === "k") move(-1);
        else if (name === "down" || name === "j") move(1);
        else if (name === "pageup") cursor = Math.max(0, cursor - (size().rows - 6));
        else if (name === "pagedown") cursor = Math.min(choices.length - 1, cursor + (size().rows - 6));
        else if (name === "home") cursor = 0;
        else if (name === "end") cursor = choices.length - 1;
        else if (name === "a" && type === "multiselect") {
          // `a` selects all, or none when all are selected already.
          const all = picked.size === choices.length;
          for (const c of choices) all ? picked.delete(c.value) : picked.add(c.value);
        } else if (name === "space" && type === "multiselect") {
          const value = choices[cursor].value;
          if (picked.has(value)) picked.delete(value);
          else picked.add(value);
        }
      }
      draw("active");
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
