/**
 * What a command module exports, after citty's `CommandDef`: its flags and help text as data, and a
 * run function that returns what to print. `cli.ts` wires argv to them; commands never exit.
 */
import type { Output } from "./format-results.ts";
import type { KeyBackend, KeyStore } from "../store/key-store.ts";

/** What the CLI needs of a store, local or remote: the command's operations, `update`, and `get` where it is O(1). */
export type CliBackend = KeyBackend & Pick<KeyStore, "update"> & Partial<Pick<KeyStore, "get">>;

/** One flag, written as cac takes it: `--name <name>` takes a value, `--json` does not. */
export interface OptionDef {
  flag: string;
  help: string;
  /** The value may arrive as a number (cac turns `--port 0x10` into 16); every other value stays as typed. */
  numeric?: boolean;
}

/** `-r, --roles <roles>` -> long `roles`, short `r`, takes a value; `--no-expiry` -> long `no-expiry`. */
export function optionNames(def: OptionDef): { long: string; short?: string; takesValue: boolean } {
  const long = /--([\w-]+)/.exec(def.flag)![1];
  return { long, short: /^-(\w),/.exec(def.flag)?.[1], takesValue: /[<[]/.test(def.flag) };
}

/** Where a command reads its environment and writes what cannot wait for its result. */
export interface CommandIO {
  env: Record<string, string | undefined>;
  /** A line for the operator (stderr). */
  log: (line: string) => void;
  /** Detail shown at LOG_LEVEL=debug, if enabled. */
  debug?: (line: string) => void;
  /** Writes to stdout (1) or stderr (2); returns an error code when the text could not be written. */
  write: (fd: 1 | 2, text: string) => string | undefined;
  /** A store to use instead of the one the flags and environment name (tests pass a memory store). */
  store?: CliBackend;
  /** Whether a person can answer prompts; found out from the terminal when absent. */
  interactive?: boolean;
  /** The command registry (lib/cli/registry.ts), for a command that describes the others (completion). */
  registry?: CommandTable;
  /** The command line after the program name, for operands cac does not keep (`-`): see ./operands.ts. */
  argv?: readonly string[];
}

/** A command as the registry loads it, with its usage name (`completion <shell>`). */
export type LoadedCommand = CommandDef<object> & { usageName: string };

/** Every command, loaded, in the registry's order, and the options every command takes. */
export interface CommandTable {
  commands(): Promise<Record<string, LoadedCommand>>;
  global: readonly OptionDef[];
}

/** A command: flags, help text and the function that runs it. */
export interface CommandDef<Flags> {
  description: string;
  /** Usage lines for `--help`, one per mode. */
  usage?: readonly string[];
  options: readonly OptionDef[];
  examples: readonly string[];
  /** The flag that points the command at a running service instead of a store (one mode's help lists it). */
  remote?: string;
  /**
   * Runs the command with the flags lib/cli/argv.ts parsed: camelCase long names, values as typed, and a
   * command argument under its name (`completion <shell>`: `shell`). A method, so any command's def fits
   * `CommandDef<object>`.
   */
  run(flags: Flags, io: CommandIO): Promise<Output>;
}
