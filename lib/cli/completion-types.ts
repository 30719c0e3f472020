/** The data a completion script is generated from (lib/cli/completion-script.ts builds it). */
export type Shell = "bash" | "zsh" | "fish";

/** What a flag's value is completed with. */
export type ValueKind = "roles" | "permissions" | "names" | "files" | "shells" | "none";

export interface FlagSpec {
  /** Long name without dashes ("roles"). */
  long: string;
  /** One-letter alias, if the flag has one ("r"). */
  short?: string;
  help: string;
  /** Whether the flag takes a value, and what completes it. */
  value?: ValueKind;
}

export interface CompletionSpec {
  program: string;
  commands: { name: string; description: string; flags: FlagSpec[] }[];
  global: FlagSpec[];
  roles: readonly string[];
  resources: readonly string[];
  actions: readonly string[];
}
