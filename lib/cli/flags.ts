/** The parsed flags of the commands, shared by the command flows and the prompts. */
import { ServiceError } from "../core/errors.ts";

/** The flags of `service-api apikey`, as strings after parsing. */
export interface ApikeyFlags {
  create?: boolean;
  delete?: boolean;
  list?: boolean;
  update?: boolean;
  name?: string;
  id?: string;
  description?: string;
  roles?: string;
  permissions?: string;
  overwrite?: boolean;
  json?: boolean;
  ifNotExists?: boolean;
  ifExists?: boolean;
  output?: string;
  force?: boolean;
  format?: string;
  rename?: string;
}

export const MODES = ["create", "delete", "list", "update"] as const;
export type Mode = (typeof MODES)[number];

/** The flags each mode takes (camelCase, as cac delivers them); --json, --store and --url go with all. */
const MODE_FLAGS: Record<Mode, readonly string[]> = {
  create: ["name", "description", "roles", "permissions", "overwrite", "ifNotExists", "output", "force", "format"],
  delete: ["name", "id", "ifExists"],
  list: [],
  update: ["name", "id", "description", "roles", "permissions", "rename"],
};
const COMMON = ["json", "store", "url"];
const kebab = (flag: string) => `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/**
 * The one mode the flags choose, after checking that every other flag given applies to it: a flag
 * that does not apply is an error, never silently ignored (`--list --name x` used to list every key).
 */
export function chooseMode(flags: ApikeyFlags): Mode {
  const modes = MODES.filter((mode) => flags[mode]);
  if (modes.length !== 1) {
    throw new ServiceError(
      "USAGE",
      modes.length === 0
        ? "Choose what to do: --create, --delete, --update or --list"
        : `Choose one of --create, --delete, --update and --list, not ${modes.map((m) => `--${m}`).join(" and ")}`,
    );
  }
  const mode = modes[0];
  const allowed = new Set([mode, ...MODE_FLAGS[mode], ...COMMON]);
  const known = new Set([...MODES, ...Object.values(MODE_FLAGS).flat(), ...COMMON]);
  const stray = Object.entries(flags)
    .filter(([flag, value]) => value !== undefined && value !== false && known.has(flag) && !allowed.has(flag))
    .map(([flag]) => kebab(flag));
  if (stray.length) {
    throw new ServiceError("USAGE", `--${mode} does not take ${stray.join(", ")}. Run 'service-api apikey --help'.`);
  }
  const pair = (a: keyof ApikeyFlags, b: keyof ApikeyFlags) => {
    if (flags[a] !== undefined && flags[a] !== false && flags[b] !== undefined && flags[b] !== false) {
      throw new ServiceError("USAGE", `Use ${kebab(a)} or ${kebab(b)}, not both`);
    }
  };
  pair("name", "id");
  pair("overwrite", "ifNotExists");
  if (flags.format !== undefined && flags.json) pair("format", "json");
  if (flags.force && !flags.output) throw new ServiceError("USAGE", "--force only replaces the file --output names; give --output <file>");
  if (flags.format !== undefined && !["text", "json", "env"].includes(flags.format)) {
    throw new ServiceError("USAGE", `Unknown --format '${flags.format}': use text, json or env`);
  }
  return mode;
}
