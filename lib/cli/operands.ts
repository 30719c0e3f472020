/**
 * The operands of a command line: the words that are neither flags nor their values, and everything after
 * `--`. cac keeps no `-` (it reads it as a flag) and drops the word after it, so `apikey --scan - src`
 * is read here, from argv as typed, with the command's flag definitions to know which flags take a value.
 */
import type { OptionDef } from "./command.ts";

/**
 * `argv` after the program name, starting with the command's name (which is not an operand).
 * @example operands(["apikey", "--scan", "--store", "s", "-", "src"], defs) // ["-", "src"]
 */
export function operands(argv: readonly string[], defs: readonly OptionDef[]): string[] {
  const takesValue = new Set<string>();
  for (const def of defs) {
    if (!/[<[]/.test(def.flag)) continue;
    for (const name of def.flag.split(/[\s,]+/).filter((part) => /^--?[\w-]+$/.test(part))) takesValue.add(name);
  }
  const found: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i];
    if (word === "--") return [...found, ...argv.slice(i + 1)];
    if (word === "-" || !word.startsWith("-")) found.push(word);
    else if (!word.includes("=") && takesValue.has(word)) i++;
  }
  return found;
}
