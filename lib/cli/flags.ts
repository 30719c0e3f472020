/**
 * The parsed flags of the commands, shared by the command flows and the prompts, and the values of the
 * lifecycle flags (--expires-in/--expires-at/--no-expiry, --grace, --since and --limit). Their parsers
 * are lib/core/lifecycle.ts's, so the CLI, GraphQL and the library accept and refuse the same things
 * with the same messages.
 */
import { ServiceError } from "../core/errors.ts";
import { redactSecrets } from "../core/secret.ts";
import { expiryFrom, parseGrace, parseSince } from "../core/lifecycle.ts";
import { parseRateLimits, type RateLimit } from "../core/rate-limits.ts";
import type { Credits } from "../core/credits.ts";
import { checkAllowFrom } from "../core/allow-from.ts";
import { creditsFrom } from "./credits.ts";

/** The flags of `service-api apikey`, as strings after parsing. */
export interface ApikeyFlags {
  create?: boolean;
  delete?: boolean;
  list?: boolean;
  update?: boolean;
  /** A new secret for the key --name or --id chooses, with the same id and settings. */
  rotate?: boolean;
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
  /** create, update: a duration (`7d`) after which the key stops working. */
  expiresIn?: string;
  /** create, update: the ISO 8601 instant the key stops working. */
  expiresAt?: string;
  /** False with `--no-expiry` (update: the key never expires again); cac sets true otherwise. */
  expiry?: boolean;
  /** create with --overwrite, rotate: how long the replaced secret keeps working. */
  grace?: string;
  /** delete: every key whose expiry or grace period has passed. */
  expired?: boolean;
  /** delete: how long retired secrets are kept (a duration); --expired prunes the older ones. */
  retiredRetention?: string;
  audit?: boolean;
  /** audit: a duration back from now or an instant. */
  since?: string;
  /** audit: at most this many events, the latest; list: at most this many keys, the oldest. */
  limit?: string;
  /** Write every key (hashes, never secrets) as JSON lines. */
  export?: boolean;
  /** export: include the audit trail. */
  withAudit?: boolean;
  /** Load keys from an export file (`-`: stdin). */
  import?: string;
  /** import: check and report, change nothing. */
  dryRun?: boolean;
  /** import: fail (default), skip or overwrite a key already in the store. */
  onConflict?: string;
  /** create, update: `key=value` labels to set. */
  label?: string;
  /** update: label keys to remove. */
  unlabel?: string;
  /** list: only the keys matching this filter (lib/core/filter.ts). */
  filter?: string;
  /** create, update: preset names (lib/core/presets.ts), comma-separated. */
  preset?: string;
  /** Scan files, folders and stdin (`-`) for leaked secrets. */
  scan?: boolean;
  /** scan: delete every live key found. */
  revoke?: boolean;
  /** scan: what to scan, when not given on the command line (library callers). */
  paths?: string[];
  /** update: refuse the key (401, KEY_DISABLED) until `--enable`. */
  disable?: boolean;
  /** update: a disabled key works again. */
  enable?: boolean;
  /** update --disable: why, kept with the key. */
  reason?: string;
  /** Print how many requests a key authenticated (in all, per day for the last 30). */
  usage?: boolean;
  /** create, update: `n/duration[,...]`; false with `--no-rate-limit` (update: no limits any more); cac sets true otherwise. */
  rateLimit?: string | boolean;
  /** create, update: the credits (`--credits <n>`); false with `--no-credits` (update: none any more). */
  credits?: string | boolean;
  /** with --credits: `n/day` or `n/month`. */
  refill?: string;
  /** create, update: the key's IP allow-list, CIDR blocks or addresses comma-separated; `any`: none. */
  allowFrom?: string;
}

export const MODES = ["create", "delete", "update", "rotate", "list", "audit", "usage", "export", "import", "scan"] as const;
export type Mode = (typeof MODES)[number];

/**
 * The flags each mode takes (camelCase, as cac delivers them); --json, --store and --url go with all.
 * `noExpiry` stands for `--no-expiry`, which cac delivers as `expiry: false`; `noRateLimit` and `noCredits` likewise.
 */
const MODE_FLAGS: Record<Mode, readonly string[]> = {
  create: ["name", "description", "roles", "permissions", "overwrite", "ifNotExists", "output", "force", "format", "expiresIn", "expiresAt", "grace", "label", "preset", "dryRun", "rateLimit", "credits", "refill", "allowFrom"],
  delete: ["name", "id", "ifExists", "expired", "retiredRetention"],
  list: ["filter", "limit"],
  update: ["name", "id", "description", "roles", "permissions", "rename", "expiresIn", "expiresAt", "noExpiry", "label", "unlabel", "disable", "enable", "reason", "preset", "dryRun", "rateLimit", "noRateLimit", "credits", "refill", "noCredits", "allowFrom"],
  audit: ["since", "limit"],
  export: ["output", "force", "withAudit"],
  import: ["dryRun", "onConflict"],
  rotate: ["name", "id", "grace", "output", "force", "format"],
  scan: ["revoke", "paths"],
  usage: ["name", "id"],
};
const COMMON = ["json", "store", "url"];
const kebab = (flag: string) => `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/**
 * The one mode the flags choose, after checking that every other flag given applies to it: a flag
 * that does not apply is an error, never silently ignored (`--list --name x` must not list every key).
 */
export function chooseMode(given: ApikeyFlags): Mode {
  const { expiry, rateLimit, credits, ...rest } = given;
  const flags: ApikeyFlags & { noExpiry?: boolean; noRateLimit?: boolean; noCredits?: boolean } = {
    ...rest,
    noExpiry: expiry === false || undefined,
    noRateLimit: rateLimit === false || undefined,
    rateLimit: typeof rateLimit === "string" ? rateLimit : undefined,
    noCredits: credits === false || undefined,
    credits: typeof credits === "string" ? credits : undefined,
  };
  const modes = MODES.filter((mode) => flags[mode]);
  if (modes.length !== 1) {
    throw new ServiceError(
      "USAGE",
      modes.length === 0
        ? `Choose what to do: ${MODES.slice(0, -1).map((m) => `--${m}`).join(", ")} or --${MODES.at(-1)}`
        : `Choose one of ${MODES.map((m) => `--${m}`).join(", ")}; not ${modes.map((m) => `--${m}`).join(" and ")}`,
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
  const has = (flag: keyof typeof flags) => flags[flag] !== undefined && flags[flag] !== false;
  const pair = (a: keyof typeof flags, b: keyof typeof flags) => {
    if (has(a) && has(b)) throw new ServiceError("USAGE", `Use ${kebab(a)} or ${kebab(b)}, not both`);
  };
  pair("name", "id");
  pair("overwrite", "ifNotExists");
  pair("expiresIn", "expiresAt");
  pair("noExpiry", "expiresIn");
  pair("noExpiry", "expiresAt");
  pair("expired", "name");
  pair("expired", "id");
  pair("disable", "enable");
  // An empty --id chooses no key: a missing flag (exit 2), not a key that is not there (exit 1).
  if (flags.id === "") throw new ServiceError("USAGE", `--${mode} --id needs a key id (--id <id>), not an empty one`);
  if (has("reason") && !flags.disable) throw new ServiceError("USAGE", "--reason says why a key is disabled: it needs --disable");
  if (flags.expired && flags.ifExists) {
    throw new ServiceError("USAGE", "--delete --expired already exits 0 when nothing has expired: drop --if-exists");
  }
  if (has("grace") && !flags.overwrite && mode !== "rotate") {
    throw new ServiceError("USAGE", "--grace keeps the old secret of a key working: it needs --overwrite or --rotate");
  }
  if (flags.format !== undefined && flags.json) pair("format", "json");
  if (flags.force && !flags.output) throw new ServiceError("USAGE", "--force only replaces the file --output names; give --output <file>");
  if (flags.dryRun && mode !== "import" && (flags.output !== undefined || flags.format === "env")) {
    throw new ServiceError("USAGE", `--dry-run makes no key and so no secret: drop ${flags.output !== undefined ? "--output" : "--format env"}`);
  }
  if (flags.format !== undefined && !["text", "json", "env"].includes(flags.format)) {
    throw new ServiceError("USAGE", `Unknown --format '${flags.format}': use text, json or env`);
  }
  return mode;
}

/** The values of the lifecycle flags, checked (exit 2 when wrong) before any store is opened. */
export interface LifecycleValues {
  /** The expiry to set (create, update), as stored. */
  expiresAt?: string;
  /** update --no-expiry: the key never expires again. */
  clearExpiry: boolean;
  /** create --overwrite --grace, rotate --grace: how long the replaced secret keeps working. */
  graceMs?: number;
  /** audit --since, in ms since the epoch. */
  since?: number;
  /** audit, list --limit. */
  limit?: number;
  /** create, update --rate-limit; update --no-rate-limit: []. */
  rateLimits?: RateLimit[];
  /** create, update --credits [--refill]; update --no-credits: null. */
  credits?: Credits | null;
  /** create, update --allow-from; `any`: []. */
  allowFrom?: string[];
}

/**
 * The lifecycle flags' values at `now`, or INVALID_INPUT (exit 2) naming the flag: a past or unparsable
 * expiry, a grace period over 24 h, a bad --since or --limit.
 * @example lifecycleValues({ create: true, expiresIn: "1h" }, Date.now()).expiresAt // "2026-11-22T23:00:00.000Z"
 */
export function lifecycleValues(flags: ApikeyFlags, now: number): LifecycleValues {
  const limit = flags.limit === undefined ? undefined : String(flags.limit).trim();
  if (limit !== undefined && !/^[1-9]\d{0,8}$/.test(limit)) {
    const what = flags.list ? "keys" : "events";
    throw new ServiceError("INVALID_INPUT", `--limit needs a whole number of ${what}, 1 or more (got '${[...redactSecrets(limit)].slice(0, 20).join("")}')`);
  }
  return {
    expiresAt: expiryFrom({ expiresIn: flags.expiresIn, expiresAt: flags.expiresAt }, now),
    clearExpiry: flags.expiry === false,
    graceMs: flags.grace === undefined ? undefined : parseGrace(flags.grace),
    since: flags.since === undefined ? undefined : parseSince(flags.since, now),
    limit: limit === undefined ? undefined : Number(limit),
    rateLimits: typeof flags.rateLimit === "string" ? parseRateLimits(flags.rateLimit) : flags.rateLimit === false ? [] : undefined,
    credits: creditsFrom(flags),
    allowFrom: flags.allowFrom === undefined ? undefined : checkAllowFrom(String(flags.allowFrom)),
  };
}
