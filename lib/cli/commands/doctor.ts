/**
 * `service-api doctor`: which store this user's commands use, where that choice came from, and whether
 * it works: its owner and modes (a directory store), its key count, Redis reachability (a Redis store),
 * whether its audit trail can be written, the runtime and the version. One pass/fail line per check,
 * or the same as JSON; exit 1 when a check fails. It changes nothing: it creates no missing store, and
 * a store whose folders are open to other users is reported (with the fix) and not opened, since opening
 * it would make them private (`_fs-trust.ts`), as every other command does.
 */
import * as fs from "node:fs";
import { basename, join } from "node:path";
import process from "node:process";
import { isServiceError } from "../../core/errors.ts";
import { redactSecrets } from "../../core/secret.ts";
import { VERSION } from "../../core/version.ts";
import { describeStore, openKeyStore, parseStoreSpec, type StoreSpec, storeSource } from "../../store/config.ts";
import { fsPresence, type LooseFolder, looseFolders } from "../../store/drivers/_fs-presence.ts";
import type { StoreTopology } from "../../store/types.ts";
import type { CommandDef, CommandIO } from "../command.ts";
import type { Output } from "../format-results.ts";
import { jsonLine } from "../json-text.ts";
import { webhooksCheck } from "../webhook-doctor.ts";

export interface DoctorFlags {
  store?: string;
  json?: boolean;
}

export interface Check {
  name: "store" | "owner" | "redis" | "replicas" | "persistence" | "keys" | "audit" | "webhooks" | "runtime" | "version";
  ok: boolean;
  detail: string;
  /** Works, but an operator should act (persistence that loses deletes on a restart): "warn", exit 0. */
  warning?: true;
}

/** Longest a Redis store may take to answer before its checks fail (its own connect timeout is shorter). */
const REDIS_WAIT_MS = 10_000;
const octal = (mode: number) => mode.toString(8).padStart(4, "0");
const euid = () => process.geteuid?.() ?? -1;
const messageOf = (error: unknown) => redactSecrets(isServiceError(error) || error instanceof Error ? error.message : String(error));

/**
 * The directory's owner and mode: ours (or root's to act as the owner), and private, its folders too; or,
 * when missing, whether it could be made. Read-only (`looseFolders`): `open` is true when a folder is open
 * to other users, which opening the store would change.
 */
function ownerCheck(dir: string): { check: Check; exists: boolean; open: boolean } {
  const found = fsPresence(dir);
  if (!found.exists) {
    const detail = `${dir} does not exist yet; ${found.creatable ? "" : "it cannot be created: "}${found.why}`;
    return { check: { name: "owner", ok: found.creatable, detail }, exists: false, open: false };
  }
  const me = euid();
  const loose = looseFolders(dir);
  const open = loose.filter((f) => f.why === "open");
  const shown = (f: LooseFolder) => `${f.path === dir ? "the store" : `${basename(f.path)}/`} ${octal(f.mode)}`;
  const problems = [
    me !== -1 && me !== 0 && found.uid !== me ? `not yours (uid ${me})` : "",
    open.length ? `open to other users (${open.map(shown).join(", ")}; should be 0700, left as found). Fix: chmod 700 ${open.map((f) => f.path).join(" ")}` : "",
    ...loose.filter((f) => f.why === "owner").map((f) => `${f.path} belongs to uid ${f.uid}, not to the store's owner`),
  ].filter(Boolean);
  const detail = `uid ${found.uid}, gid ${found.gid}, mode ${octal(found.mode)}${problems.length ? `: ${problems.join("; ")}` : ""}`;
  return { check: { name: "owner", ok: problems.length === 0, detail }, exists: true, open: open.length > 0 };
}

/** Whether this process (as the store's owner, once the store is open) could append to `path` or create it. */
function writable(path: string): { ok: boolean; why: string } {
  try {
    // Opening for append writes nothing; it is refused exactly when an append would be.
    fs.closeSync(fs.openSync(path, fs.constants.O_WRONLY | fs.constants.O_APPEND | (fs.constants.O_NOFOLLOW ?? 0)));
    return { ok: true, why: `${path} is writable` };
  } catch (error) {
    const code = (error as { code?: string })?.code;
    if (code !== "ENOENT") return { ok: false, why: `${path} cannot be written (${code ?? error})` };
  }
  // Not there yet: made on the first event, in a directory that must let this user add files.
  for (const dir of [join(path, ".."), join(path, "..", "..")]) {
    const stat = fs.statSync(dir, { throwIfNoEntry: false });
    if (!stat) continue;
    const me = euid();
    const bits = me === 0 ? 0o300 : stat.uid === me ? stat.mode & 0o300 : 0;
    const ok = me === -1 || bits === 0o300;
    return { ok, why: ok ? `${path} can be created` : `${path} cannot be created: ${dir} is not writable by uid ${me}` };
  }
  return { ok: true, why: `${path} is made with the store` };
}

/** The Redis lines: which Redis answers (mode, master), its replicas, its persistence. */
export function topologyChecks(where: string, topology: StoreTopology): Check[] {
  const { mode, master, replicas, aof, warnings } = topology;
  const persistence = warnings.find((w) => w.startsWith("AOF")) ?? (aof ? "AOF on (appendonly yes)" : warnings[0] ?? "unknown");
  const replica = warnings.find((w) => w.startsWith("this Redis is a replica"));
  return [
    { name: "redis", ok: true, detail: `${where} answers: ${mode === "sentinel" ? "Sentinel, master" : "one Redis,"} ${master}${replica ? `; ${replica}` : ""}`, ...(replica ? { warning: true as const } : {}) },
    { name: "replicas", ok: true, detail: replicas === null ? "unknown: INFO is not permitted" : `${replicas} connected${replicas ? "; changes wait for one to confirm" : ""}` },
    { name: "persistence", ok: true, detail: persistence, ...(aof ? {} : { warning: true as const }) },
  ];
}

/** Opens the store and counts its keys; then the audit trail. Redis: reachability first, bounded in time. */
async function storeChecks(spec: StoreSpec, io: CommandIO): Promise<{ checks: Check[]; topology?: StoreTopology }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${REDIS_WAIT_MS / 1000} s`)), REDIS_WAIT_MS);
  });
  const checks: Check[] = [];
  let store;
  let topology: StoreTopology | undefined;
  try {
    store = await Promise.race([openKeyStore(spec, io.debug, { oneShot: true }), late]);
    topology = await Promise.race([store.topology?.(), late]);
    if (topology) checks.push(...topologyChecks(describeStore(spec), topology));
    const keys = await Promise.race([store.list(), late]);
    checks.push({ name: "keys", ok: true, detail: `${keys.length} key${keys.length === 1 ? "" : "s"}` });
    const hooks = await Promise.race([webhooksCheck(store), late]);
    if (hooks) checks.push(hooks);
  } catch (error) {
    const failed = spec.kind === "redis" && !store ? "redis" : "keys";
    checks.push({ name: failed, ok: false, detail: messageOf(error) });
    if (failed === "redis") checks.push({ name: "keys", ok: false, detail: "not read: Redis is unreachable" });
  } finally {
    clearTimeout(timer);
  }
  if (spec.kind === "fs") {
    const { ok, why } = writable(join(spec.dir, "audit", "audit.log"));
    checks.push({ name: "audit", ok, detail: why });
  } else {
    const reachable = checks.every((c) => c.ok);
    const where = spec.kind === "redis" ? "kept in Redis" : "kept in this process only";
    checks.push({ name: "audit", ok: reachable, detail: reachable ? where : "not checked: the store is unavailable" });
  }
  await store?.close().catch(() => {});
  return { checks, topology };
}

/** The runtime: "node 22.11.0" or "deno 2.1.4". */
function runtime(): string {
  const deno = (globalThis as { Deno?: { version?: { deno?: string } } }).Deno;
  return deno?.version?.deno ? `deno ${deno.version.deno}` : `node ${process.versions.node}`;
}

/** Runs every check, in order; a store that cannot be read still gets its runtime and version lines. */
export async function runDoctor(flags: DoctorFlags, io: CommandIO): Promise<Output> {
  const spec = parseStoreSpec(flags.store, io.env); // a malformed --store is bad usage (exit 2), as everywhere
  const source = storeSource(flags.store, io.env);
  const checks: Check[] = [{ name: "store", ok: true, detail: `${describeStore(spec)} (from ${source.detail})` }];
  let exists = true;
  let open = false;
  let topology: StoreTopology | undefined;
  if (spec.kind === "fs") {
    const owner = ownerCheck(spec.dir);
    checks.push(owner.check);
    ({ exists, open } = owner);
  }
  if (open) {
    // Opening it would make its folders private: doctor changes nothing, so it reads no further.
    checks.push({ name: "keys", ok: false, detail: "not read: opening the store would make its folders private (see owner)" });
    checks.push({ name: "audit", ok: false, detail: "not checked: the store was not opened (see owner)" });
  } else if (exists) {
    const found = await storeChecks(spec, io);
    checks.push(...found.checks);
    topology = found.topology;
  }
  else {
    const note = checks[1].ok ? "made on the first create or when serve starts" : "the store cannot be created";
    checks.push({ name: "keys", ok: checks[1].ok, detail: `0 keys (${note})` });
    checks.push({ name: "audit", ok: checks[1].ok, detail: `made with the store` });
  }
  checks.push({ name: "runtime", ok: true, detail: runtime() }, { name: "version", ok: true, detail: VERSION });
  const ok = checks.every((c) => c.ok);
  if (flags.json) {
    const redis = topology && { mode: topology.mode, master: topology.master, replicas: topology.replicas, aof: topology.aof };
    return { stdout: jsonLine({ ok, store: describeStore(spec), source: source.source, ...(redis ? { redis } : {}), checks }), exitCode: ok ? 0 : 1 };
  }
  const lines = checks.map((c) => `${c.ok ? (c.warning ? "warn" : "pass") : "FAIL"}  ${c.name.padEnd(11)} ${c.detail}`);
  return { stdout: lines.join("\n") + "\n", exitCode: ok ? 0 : 1 };
}

/** `service-api doctor`: flags, help text and `run`. */
export const command: CommandDef<DoctorFlags> = {
  description: "Check the key store in use (which, whose, readable, audit writable; Redis: mode, master, replicas, persistence), the runtime and the version",
  options: [{ flag: "--json", help: "Print the checks as one JSON object" }],
  examples: ["service-api doctor", "service-api doctor --store redis://127.0.0.1:6379/0 --json"],
  run: runDoctor,
};
