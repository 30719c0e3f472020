// Driving the CLI through a real terminal: tmux, when it is installed.
import { execFileSync } from "node:child_process";

export const hasTmux = (() => {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** Quotes a word for the shell tmux runs the command in. */
export const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
