/**
 * The journal that makes an import all or nothing: `meta:import`, claimed before the import writes anything
 * and taken once it is done. It names the process that runs the import, the keys it writes (id, name, hash)
 * and, whole, the keys it replaces (`--on-conflict overwrite`), so whoever finds it can undo the import:
 *
 * - the import itself, when a step fails or it is cancelled (SIGINT, SIGTERM: `ImportOptions.signal`);
 * - any later open of the store (`KeyStore.recover`, which `openKeyStore` calls) and the next import, when
 *   the process that wrote it is gone (killed, SIGKILL included): same host and its pid dead, or, from
 *   another host, no heartbeat (`meta:import-beat`, rewritten every few seconds) for a minute.
 *
 * Undoing takes the name entry of each key the import committed (an audited delete), removes what it staged
 * (records, secret entries, their order entries), puts back the keys it replaced that are gone, then takes
 * the journal. A journal also keeps a second import out while the first runs. Whoever rolls a journal back
 * first swaps in its own pid (compare and swap), so two processes that open the store never undo it twice.
 */
import { hostname } from "node:os";
import type { StoredKey } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import type { StoreContext } from "./_context.ts";
import type { ChangeOptions } from "./types.ts";

export const JOURNAL = "meta:import";
const BEAT = "meta:import-beat";
const BEAT_MS = 5_000;
/** An import on another host that has not beaten for this long is taken for dead. */
const DEAD_MS = 60_000;
/** Keys written (or undone) per step; between steps the import yields, so a signal is seen. */
export const BATCH = 256;

/** A key the import writes, as the journal names it. */
export interface JournalKey {
  id: string;
  name: string;
  hash: string;
  /** A rotated key's old secret: its entry is staged too, so a rollback removes it. */
  retiring?: StoredKey["retiring"];
  grace?: true;
}

export interface ImportJournal {
  pid: number;
  host: string;
  at: string;
  /** `removing`: the keys it replaces are being removed, nothing of its own is written yet; `writing`: after that. */
  phase: "removing" | "writing";
  keys: JournalKey[];
  replaced: StoredKey[];
}

/** Puts a replaced key back (`_transfer.ts`): false when it could not be (its name was taken meanwhile). */
export type Restore = (record: StoredKey) => Promise<boolean>;

const isJournal = (value: unknown): value is ImportJournal => {
  const j = value as ImportJournal | null;
  return typeof j === "object" && j !== null && Number.isInteger(j.pid) && typeof j.host === "string" &&
    (j.phase === "removing" || j.phase === "writing") && Array.isArray(j.keys) && Array.isArray(j.replaced);
};

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM";
  }
}

/**
 * The journal's text: JSON after a word, so that the storage hands it back as text (never parsed for us) and
 * a compare-and-swap compares exactly what was written.
 */
const textOf = (journal: ImportJournal) => `import ${JSON.stringify(journal)}`;

/** The journal as it is stored (text: the compare-and-swap compares it) and as read, or null when there is none. */
async function readJournal(ctx: StoreContext): Promise<{ text: string; journal: ImportJournal } | null> {
  const text = await ctx.storage.getItem(JOURNAL);
  if (text === null || text === undefined) return null;
  let journal: unknown;
  try {
    journal = typeof text === "string" && text.startsWith("import ") ? JSON.parse(text.slice(7)) : undefined;
  } catch {
    // not one: refused below
  }
  if (!isJournal(journal)) throw new ServiceError("STORE_UNAVAILABLE", `Key store unavailable: its import journal (${JOURNAL}) is not one this version wrote`);
  return { text: text as string, journal };
}

async function dead(ctx: StoreContext, journal: ImportJournal): Promise<boolean> {
  if (journal.host === hostname()) return !alive(journal.pid);
  const beat = Number(await ctx.storage.getItem(BEAT)) || Date.parse(journal.at);
  return ctx.now() - beat > DEAD_MS;
}

/** Lets signals and timers run, then throws CANCELLED if `signal` was aborted. */
export async function checkpoint(signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return;
  await new Promise((done) => setImmediate(done));
  if (signal.aborted) throw new ServiceError("CANCELLED", "Cancelled; nothing was changed");
}

/** Takes the name entries of the journal's keys that point at them (audited deletes), and removes all they staged. */
async function unwrite(ctx: StoreContext, keys: readonly JournalKey[], change: ChangeOptions): Promise<void> {
  const { atomic, audit, entries } = ctx;
  await ctx.bumpRevision(); // a server may remember a verification of a key this takes away
  for (let at = 0; at < keys.length; at += BATCH) {
    const steps = await Promise.allSettled(keys.slice(at, at + BATCH).map(async (key) => {
      const entry = key.grace ? entries.graceKey(key.name) : entries.nameKey(key.name);
      if ((await entries.readId(entry)) === key.id) {
        await audit("delete", key, { ...change, reason: "an import that did not finish, rolled back" });
        await atomic.takeIf(entry, key.id);
      }
      await entries.discard(key, false); // never this store's secret: not retired
    }));
    const failed = steps.find((step) => step.status === "rejected");
    if (failed) throw failed.reason; // the journal stays: the next open tries again
  }
  await ctx.bumpRevision();
}

/** Undoes the import `journal` describes and takes the journal; a message naming the replaced keys it could not put back. */
async function rollBack(ctx: StoreContext, journal: ImportJournal, restore: Restore, change: ChangeOptions): Promise<string | undefined> {
  if (journal.phase === "writing") await unwrite(ctx, journal.keys, change);
  const { readRecord, live, inGrace } = ctx.entries;
  const lost: string[] = [];
  for (const record of journal.replaced) {
    const now = await readRecord(record.id);
    if (now && ((await live(now)) || (await inGrace(now)))) continue; // never removed
    if (!(await restore(record).catch(() => false))) lost.push(`'${record.name}' (${record.id})`);
  }
  // Only this journal: a process that took it over meanwhile keeps its own.
  await ctx.atomic.takeIf(JOURNAL, textOf(journal));
  await ctx.storage.removeItem(BEAT);
  return lost.length ? `The keys it replaced could not all be put back: ${lost.join(", ")}` : undefined;
}

/**
 * Rolls back an import whose process is gone. True when no import is in the way any more, false when one
 * is running (or being rolled back by another process).
 */
export async function recoverImport(ctx: StoreContext, restore: Restore, change: ChangeOptions = {}): Promise<boolean> {
  const found = await readJournal(ctx);
  if (!found) return true;
  if (!(await dead(ctx, found.journal))) return false;
  const mine: ImportJournal = { ...found.journal, pid: process.pid, host: hostname(), at: new Date(ctx.now()).toISOString() };
  // One process takes it over: a compare-and-swap, or where the index has none, take the one read and claim anew.
  const swapped = ctx.atomic.swapIf
    ? await ctx.atomic.swapIf(JOURNAL, found.text, textOf(mine))
    : (await ctx.atomic.takeIf(JOURNAL, found.text)) && (await ctx.atomic.claim(JOURNAL, textOf(mine)));
  if (!swapped) return false;
  ctx.debug(`store: rolling back the import of ${mine.keys.length} keys that process ${found.journal.pid} on ${found.journal.host} left unfinished`);
  const lost = await rollBack(ctx, mine, restore, change);
  if (lost) ctx.debug(`store: ${lost}`);
  return true;
}

/** Rolls back an import left by a dead process; STORE_UNAVAILABLE when a live one is running. */
export async function clearWay(ctx: StoreContext, restore: Restore, change: ChangeOptions = {}): Promise<void> {
  if (await recoverImport(ctx, restore, change)) return;
  const other = (await readJournal(ctx))?.journal;
  throw new ServiceError(
    "STORE_UNAVAILABLE",
    `Key store unavailable: another import into it is in progress${other ? ` (process ${other.pid} on ${other.host})` : ""}; nothing was imported. Run this one when it is done`,
  );
}

/** An import in progress: its journal claimed, its heartbeat running. */
export interface RunningImport {
  /** Marks that the keys it replaces are removed: from now on a rollback also removes what it wrote. */
  writing(): Promise<void>;
  /** The import is done: the journal is taken. */
  finish(): Promise<void>;
  /** Undoes it; a message naming the replaced keys that could not be put back, if any. */
  rollBack(change: ChangeOptions): Promise<string | undefined>;
}

/** Claims the journal for an import of `keys` replacing `replaced` (rolling back one left by a dead process first). */
export async function beginImport(ctx: StoreContext, keys: JournalKey[], replaced: StoredKey[], restore: Restore): Promise<RunningImport> {
  let journal: ImportJournal = {
    pid: process.pid, host: hostname(), at: new Date(ctx.now()).toISOString(), phase: replaced.length ? "removing" : "writing", keys, replaced,
  };
  let text = textOf(journal);
  while (!(await ctx.atomic.claim(JOURNAL, text))) await clearWay(ctx, restore);
  const beat = () => ctx.storage.setItem(BEAT, String(ctx.now())).catch(() => {});
  await beat();
  const timer = setInterval(beat, BEAT_MS);
  (timer as { unref?: () => void }).unref?.();
  const stop = async () => {
    clearInterval(timer);
    await ctx.storage.removeItem(BEAT).catch(() => {});
  };
  return {
    async writing() {
      const next = textOf((journal = { ...journal, phase: "writing" }));
      if (ctx.atomic.swapIf ? !(await ctx.atomic.swapIf(JOURNAL, text, next)) : (await ctx.atomic.swap(JOURNAL, next), false)) {
        throw new ServiceError("STORE_UNAVAILABLE", "Key store unavailable: the import's journal was taken over by another process");
      }
      text = next;
    },
    async finish() {
      const ours = await ctx.atomic.takeIf(JOURNAL, text);
      await stop();
      if (!ours) {
        throw new ServiceError("STORE_UNAVAILABLE", "Key store unavailable: the import's journal was taken over by another process, which rolls the import back (its heartbeat stopped for 60 s). Run the import again");
      }
    },
    async rollBack(change) {
      clearInterval(timer);
      const lost = await rollBack(ctx, journal, restore, change);
      await stop();
      return lost;
    },
  };
}
