/**
 * `service-api webhook`: the endpoints that receive signed events for every key change (docs/webhooks.md).
 * `--add` prints the signing secret once (stdout, alone; `--json`: with the endpoint); `--list`, `--update`,
 * `--remove`, `--deliveries` (the last attempts) and `--test` (a `webhook.test` sent now, from this process).
 * The running servers deliver (`serve`); this command only keeps the endpoints in the store.
 */
import { ServiceError } from "../../core/errors.ts";
import { parseDuration } from "../../core/lifecycle.ts";
import { openKeyStore, parseStoreSpec } from "../../store/config.ts";
import type { KeyStore } from "../../store/types.ts";
import { parseEventTypes, testMessage } from "../../store/webhooks/events.ts";
import type { WebhookEndpoint, WebhookStore } from "../../store/webhooks/endpoints.ts";

/** What the command needs of the webhooks: a store's, or a service's over GraphQL. */
type Webhooks = Omit<WebhookStore, "saveState" | "lease">;
import type { CommandDef, CommandIO } from "../command.ts";
import type { Output } from "../format-results.ts";
import { jsonLine } from "../json-text.ts";
import { withStoreHint } from "../store-hint.ts";

export interface WebhookFlags {
  store?: string;
  /** A running service's base URL: remote mode. */
  server?: string;
  add?: boolean;
  list?: boolean;
  update?: string;
  remove?: string;
  test?: string;
  deliveries?: string;
  rotateSecret?: string;
  grace?: string;
  notifyBefore?: string;
  url?: string;
  events?: string;
  description?: string;
  allowPrivate?: boolean;
  enable?: boolean;
  disable?: boolean;
  json?: boolean;
}

const MODES = ["add", "list", "update", "remove", "test", "deliveries", "rotateSecret"] as const;
const flagOf = (mode: string) => `--${mode.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

const eventsText = (e: WebhookEndpoint) => (e.events.length ? e.events.join(",") : "all");
const line = (e: WebhookEndpoint) => `${e.id}  ${e.disabled ? "disabled" : "enabled "}  ${eventsText(e)}  ${e.url}${e.description ? `  ${e.description}` : ""}`;

function chooseMode(flags: WebhookFlags): (typeof MODES)[number] {
  const chosen = MODES.filter((m) => flags[m] !== undefined && flags[m] !== false);
  if (chosen.length !== 1) throw new ServiceError("USAGE", `Choose one of ${MODES.map(flagOf).join(", ")}${chosen.length ? ` (got ${chosen.map(flagOf).join(" and ")})` : ""}. Run 'service-api webhook --help'.`);
  const mode = chosen[0];
  if (mode !== "add" && mode !== "list" && typeof flags[mode] !== "string") throw new ServiceError("USAGE", `${flagOf(mode)} needs the endpoint's id (see webhook --list)`);
  if (mode === "add" && !flags.url) throw new ServiceError("USAGE", "--add needs --url <url> (https://, or http:// to localhost)");
  if (mode !== "add" && mode !== "update" && (flags.url || flags.events !== undefined || flags.description !== undefined || flags.notifyBefore !== undefined)) {
    throw new ServiceError("USAGE", `${flagOf(mode)} takes no --url, --events, --description or --notify-before`);
  }
  if (flags.grace !== undefined && mode !== "rotateSecret") throw new ServiceError("USAGE", "--grace goes with --rotate-secret");
  if (flags.enable && flags.disable) throw new ServiceError("USAGE", "Use --enable or --disable, not both");
  if ((flags.enable || flags.disable) && mode !== "update") throw new ServiceError("USAGE", "--enable and --disable go with --update <id>");
  if (flags.allowPrivate && mode !== "add" && mode !== "update") throw new ServiceError("USAGE", "--allow-private goes with --add or --update");
  const changes = [flags.url, flags.events, flags.description, flags.notifyBefore, flags.allowPrivate || undefined, flags.enable || undefined, flags.disable || undefined];
  if (mode === "update" && changes.every((value) => value === undefined)) {
    throw new ServiceError("USAGE", "--update needs something to change: --url, --events, --description, --notify-before, --allow-private, --enable or --disable");
  }
  return mode;
}

const notifyBefore = (flags: WebhookFlags) => (flags.notifyBefore === undefined ? undefined : parseDuration(String(flags.notifyBefore), "--notify-before"));

/** Runs one mode over the store's webhooks. */
export async function runWebhook(flags: WebhookFlags, hooks: Webhooks): Promise<Output> {
  const mode = chooseMode(flags);
  const json = Boolean(flags.json);
  if (mode === "add") {
    const { endpoint, secret } = await hooks.add({
      url: flags.url!, events: parseEventTypes(flags.events), description: flags.description, allowPrivate: flags.allowPrivate, notifyBeforeMs: notifyBefore(flags),
    });
    if (json) return { stdout: jsonLine({ ...endpoint, secret }), exitCode: 0 };
    return {
      stdout: `${secret}\n`,
      notice: `Added webhook endpoint ${endpoint.id} for ${endpoint.url} (events: ${eventsText(endpoint)}). Store the signing secret now: it is not shown again.`,
      exitCode: 0,
    };
  }
  if (mode === "list") {
    const all = await hooks.list();
    if (json) return { stdout: jsonLine(all), exitCode: 0 };
    return all.length ? { stdout: all.map(line).join("\n") + "\n", exitCode: 0 } : { notice: "No webhook endpoints", exitCode: 0 };
  }
  const id = flags[mode]!.trim();
  if (mode === "remove") {
    const removed = await hooks.remove(id);
    if (!removed) throw new ServiceError("NOT_FOUND", `No webhook endpoint with id ${id}`);
    return json ? { stdout: jsonLine({ removed: 1, id }), exitCode: 0 } : { stdout: `Removed webhook endpoint ${id}\n`, exitCode: 0 };
  }
  if (mode === "rotateSecret") {
    const graceMs = flags.grace === undefined ? undefined : /^0+(ms|s|m|h|d|w)?$/.test(String(flags.grace).trim()) ? 0 : parseDuration(String(flags.grace), "--grace");
    const { endpoint, secret, oldUntil } = await hooks.rotateSecret(id, graceMs);
    if (json) return { stdout: jsonLine({ id: endpoint.id, secret, ...(oldUntil ? { oldSecretUntil: oldUntil } : {}) }), exitCode: 0 };
    const old = oldUntil ? `The old secret signs too until ${oldUntil}.` : "The old secret signs no more.";
    return { stdout: `${secret}\n`, notice: `New signing secret for webhook endpoint ${endpoint.id}. ${old} Store it now: it is not shown again.`, exitCode: 0 };
  }
  if (mode === "update") {
    const disabled = flags.disable ? true : flags.enable ? false : undefined;
    const patch = { url: flags.url, events: parseEventTypes(flags.events), description: flags.description, allowPrivate: flags.allowPrivate, disabled, notifyBeforeMs: notifyBefore(flags) };
    const updated = await hooks.update(id, JSON.parse(JSON.stringify(patch)));
    return { stdout: json ? jsonLine(updated) : line(updated) + "\n", exitCode: 0 };
  }
  const endpoint = await hooks.get(id);
  if (!endpoint) throw new ServiceError("NOT_FOUND", `No webhook endpoint with id ${id}`);
  if (mode === "deliveries") {
    const { attempts } = await hooks.state(id);
    if (json) return { stdout: jsonLine(attempts), exitCode: 0 };
    const lines = attempts.map((a) => `${a.at}  ${a.ok ? "ok    " : "FAILED"}  ${a.status ?? "-"}  ${a.type}  ${a.id}  attempt ${a.attempt}${a.error ? `  ${a.error}` : ""}`);
    return lines.length ? { stdout: lines.join("\n") + "\n", exitCode: 0 } : { notice: "No delivery attempts yet", exitCode: 0 };
  }
  const { sendWebhook } = await import("../../http/webhooks/send.ts");
  const message = testMessage(id, Date.now());
  const result = await sendWebhook(endpoint.url, { allowPrivate: endpoint.allowPrivate }, await hooks.signingSecrets(id), message);
  if (json) return { stdout: jsonLine({ delivered: result.ok, id: message.id, ...result }), exitCode: result.ok ? 0 : 1 };
  const said = result.ok ? `Delivered webhook.test ${message.id}: ${endpoint.url} answered ${result.status}` : `webhook.test not delivered to ${endpoint.url}: ${result.error}`;
  return { stdout: said + "\n", exitCode: result.ok ? 0 : 1 };
}

export async function run(flags: WebhookFlags, io: CommandIO): Promise<Output> {
  chooseMode(flags); // bad usage is reported before any store is opened
  const given = io.store as Partial<KeyStore> | undefined;
  if (given) {
    if (!given.webhooks) throw new ServiceError("USAGE", "This store keeps no webhooks");
    return await runWebhook(flags, given.webhooks);
  }
  if (flags.server && flags.store) throw new ServiceError("USAGE", "Use --server or --store, not both");
  const server = flags.server ?? (flags.store ? undefined : io.env.SERVICE_API_URL?.trim() || undefined);
  if (server) {
    const { openRemoteWebhooks } = await import("../../client/remote-webhooks.ts");
    return await runWebhook(flags, openRemoteWebhooks(server, io.env));
  }
  try {
    const spec = parseStoreSpec(flags.store, io.env);
    if (spec.kind === "memory") throw new ServiceError("USAGE", "memory: keeps webhooks only inside one process, and the CLI exits at once. Use a directory (fs:<dir>) or redis://, or --server to ask a running service");
    const store = await openKeyStore(spec, io.debug, { oneShot: true });
    try {
      return await runWebhook(flags, store.webhooks!);
    } finally {
      await store.close();
    }
  } catch (error) {
    throw withStoreHint(error, flags.store, io.env);
  }
}

/** `service-api webhook`: flags, help text and `run`. */
export const command: CommandDef<WebhookFlags> = {
  description: "Send signed events (Standard Webhooks) to your endpoints for every key change",
  remote: "--server",
  usage: [
    "service-api webhook --add --url <url> [--events <type,...>] [--description <text>] [--notify-before <dur>] [--allow-private] [--json]",
    "service-api webhook --list [--json]",
    "service-api webhook --update <id> [--url <url>] [--events <type,...>] [--description <text>] [--notify-before <dur>] [--enable | --disable] [--json]",
    "service-api webhook --rotate-secret <id> [--grace <dur>] [--json]",
    "service-api webhook --remove <id> | --test <id> | --deliveries <id> [--json]",
  ],
  options: [
    { flag: "--add", help: "Add an endpoint; prints its signing secret (whsec_…) once" },
    { flag: "--list", help: "List the endpoints (never their secrets)" },
    { flag: "--update <id>", help: "Change an endpoint's URL, events or description, or enable or disable it" },
    { flag: "--remove <id>", help: "Remove an endpoint" },
    { flag: "--test <id>", help: "Send the endpoint a webhook.test event now and print its answer" },
    { flag: "--deliveries <id>", help: "The endpoint's last delivery attempts, with status and time" },
    { flag: "--rotate-secret <id>", help: "Give an endpoint a new signing secret (printed once); the old one signs too for --grace" },
    { flag: "--grace <dur>", help: "rotate-secret: how long the old secret signs too (default 24h, at most 7d, 0: not at all)" },
    { flag: "--url <url>", help: "Where to send: https://, or http:// to localhost" },
    { flag: "--events <types>", help: "Comma-separated event types (key.created, key.deleted, ...); default all" },
    { flag: "--description <text>", help: "Free-text description" },
    { flag: "--notify-before <dur>", help: "Send key.expiring this long before a key expires (default 7d)" },
    { flag: "--allow-private", help: "Allow sending to private addresses (10.0.0.0/8, 192.168.0.0/16, ...)" },
    { flag: "--enable", help: "update: deliver to it again" },
    { flag: "--disable", help: "update: stop delivering to it (events wait)" },
    { flag: "--server <url>", help: "Act on a running service instead of a store, with the key in SERVICE_API_KEY (env SERVICE_API_URL)" },
    { flag: "--json", help: "Print JSON" },
  ],
  examples: [
    "service-api webhook --add --url https://hooks.example.com/keys --events key.created,key.deleted",
    "service-api webhook --test wh_0123456789abcdef0123456789abcdef",
  ],
  run,
};
