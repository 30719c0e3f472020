/**
 * Exporting a store's records and importing them into another (the format is in transfer.ts). An import
 * keeps ids, names, hashes and times, so every secret that worked before works after it. All or nothing,
 * also when stopped part-way: under a journal (`_import-journal.ts`) it stages every key's record and secret
 * entry, appends the `import` events (before the commit, as every change does), then commits each key by
 * claiming its name; a failure or a signal rolls it all back, and a process killed meanwhile leaves the
 * journal, which the next open of the store rolls back.
 */
import type { StoredKey } from "../core/model.ts";
import { isKeyId } from "../core/input.ts";
import { ServiceError } from "../core/errors.ts";
import { creditsAt, storedCredits } from "../core/credits.ts";
import type { StoreContext } from "./_context.ts";
import type { ExportedKey } from "./transfer.ts";
import type { ChangeOptions, ImportOptions, ImportReport, ImportedKey } from "./types.ts";
import { BATCH, beginImport, checkpoint, clearWay, type JournalKey, recoverImport, type Restore } from "./_import-journal.ts";

/** Name entries read per batch. */
const CHUNK = 256;

type RemoveById = (id: string, action: "delete", options: ChangeOptions) => Promise<unknown>;

/** The name entries, a chunk at a time: read from the backend as it goes where it can (`scan`). */
async function* nameChunks({ storage, atomic }: StoreContext): AsyncGenerator<string[]> {
  if (atomic.scan) return yield* atomic.scan("names", CHUNK);
  const names = await storage.getKeys("names");
  for (let at = 0; at < names.length; at += CHUNK) yield names.slice(at, at + CHUNK);
}

/** Every live key's record (hash included), a chunk of names at a time, in no particular order. */
async function* livePages(ctx: StoreContext): AsyncGenerator<StoredKey[]> {
  const { storage, entries } = ctx;
  for await (const chunk of nameChunks(ctx)) {
    const ids = (await storage.getItems(chunk))
      .filter((entry): entry is { key: string; value: string } => isKeyId(entry.value));
    const values = await storage.getItems(ids.map(({ value }) => `keys:${value}`));
    const found: StoredKey[] = [];
    values.forEach(({ value }, i) => {
      const record = entries.checked(ids[i].value, value);
      // Only the entry of the record's own name: mid-rename a key has two, and it is listed once.
      if (record && ids[i].key === entries.nameKey(record.name)) found.push(record);
    });
    if (found.length) yield found;
  }
}

/** Every live key's record, all pages in one array. */
async function liveRecords(ctx: StoreContext): Promise<StoredKey[]> {
  const found: StoredKey[] = [];
  for await (const page of livePages(ctx)) for (const record of page) found.push(record);
  return found;
}

/** The key (live or in its grace period) an entry points at, if it is one. */
async function holder({ entries }: StoreContext, entry: string): Promise<StoredKey | null> {
  const record = await entries.readRecord(await entries.readId(entry));
  return record && ((await entries.live(record)) || (await entries.inGrace(record))) ? record : null;
}

/** Why `record` cannot go in as it is: the keys in its way, each with the reason. */
async function conflicts(ctx: StoreContext, record: StoredKey): Promise<{ id: string; why: string }[]> {
  const { nameKey, graceKey, readRecord, live, inGrace } = ctx.entries;
  const found = new Map<string, string>();
  const same = await readRecord(record.id);
  if (same && ((await live(same)) || (await inGrace(same)))) found.set(same.id, `key ${same.id} is already in the store`);
  const named = await holder(ctx, record.graceUntil ? graceKey(record.name) : nameKey(record.name));
  if (named && !found.has(named.id)) found.set(named.id, `the name '${record.name}' is taken by key ${named.id}`);
  for (const hash of [record.hash, record.retiring?.hash]) {
    const secret = hash ? await holder(ctx, `secrets:${hash}`) : null;
    if (secret && !found.has(secret.id)) found.set(secret.id, `its secret is already key ${secret.id}`);
  }
  return [...found].map(([id, why]) => ({ id, why }));
}

/**
 * An imported key's credits set anew at `now` (their refill applied first): an import sets the count, as
 * an update does, so a count a server still holds for this id (Redis keeps one after a delete) is stale.
 */
function restamped(record: StoredKey, now: number): StoredKey {
  return record.credits ? { ...record, credits: storedCredits(creditsAt(record.credits, now), now, record.credits) } : record;
}

/** Writes one key whole, as a create does; false when its name was taken meanwhile (then nothing of it is left). */
async function put(ctx: StoreContext, exported: StoredKey, change: ChangeOptions): Promise<boolean> {
  const record = restamped(exported, ctx.now());
  await stage(ctx, record);
  try {
    await ctx.audit("import", record, change);
    if (await commitKey(ctx, record)) return true;
  } catch (error) {
    await ctx.entries.discard(record, false).catch(() => {}); // not imported: never a key of this store
    throw error;
  }
  await ctx.entries.discard(record, false);
  return false;
}

/** A key's record and secret entry: written, but no key until its name (or grace) entry points at it. */
async function stage({ storage }: StoreContext, record: StoredKey): Promise<void> {
  const hashes = [record.hash, ...(record.retiring ? [record.retiring.hash] : [])]; // a rotated key's old secret too
  await Promise.all([storage.setItem(`keys:${record.id}`, record), ...hashes.map((hash) => storage.setItem(`secrets:${hash}`, record.id))]);
}

/** The commit point of one staged key: its name entry claimed (its grace entry set); false when the name was taken. */
async function commitKey({ storage, atomic, entries }: StoreContext, record: StoredKey): Promise<boolean> {
  if (!record.graceUntil) return atomic.claim(entries.nameKey(record.name), record.id);
  await atomic.exclusive(`keys:${record.id}`, () => storage.setItem(entries.graceKey(record.name), record.id));
  return true;
}

/** What an import will do, decided before it writes anything: the report, the keys to remove and those to write. */
interface ImportPlan {
  report: ImportReport;
  toRemove: Set<string>;
  toWrite: ExportedKey[];
}

/** Sorts `keys` by their conflicts under `onConflict`; a conflict under "fail" throws before anything is written. */
async function planImport(ctx: StoreContext, keys: readonly ExportedKey[], onConflict: ImportOptions["onConflict"] = "fail", signal?: AbortSignal): Promise<ImportPlan> {
  const report: ImportReport = { imported: [], skipped: [], replaced: [] };
  const toRemove = new Set<string>();
  const toWrite: ExportedKey[] = [];
  for (const [i, key] of keys.entries()) {
    if (i % BATCH === 0) await checkpoint(signal); // a long plan can be cancelled too (it writes nothing)
    const found = await conflicts(ctx, key.record);
    const entry: ImportedKey = { id: key.record.id, name: key.record.name, line: key.line };
    if (found.length === 0) {
      toWrite.push(key);
      report.imported.push(entry);
    } else if (onConflict === "fail") {
      throw new ServiceError(
        "NAME_TAKEN",
        `Line ${key.line} of the import: ${found.map((c) => c.why).join("; ")}. Nothing was imported; ` +
          "pass --on-conflict skip to leave such keys as they are, or overwrite to replace them",
      );
    } else if (onConflict === "skip") {
      report.skipped.push({ ...entry, reason: found.map((c) => c.why).join("; ") });
    } else {
      for (const { id } of found) toRemove.add(id);
      toWrite.push(key);
      report.replaced.push({ ...entry, reason: found.map((c) => c.why).join("; ") });
    }
  }
  return { report, toRemove, toWrite };
}

/** Runs `step` over `items` a batch at a time; between batches a signal may cancel (`checkpoint`). */
async function inBatches<T>(items: readonly T[], signal: AbortSignal | undefined, step: (item: T) => Promise<unknown>): Promise<void> {
  for (let at = 0; at < items.length; at += BATCH) {
    await checkpoint(signal);
    // Every step of a batch settles before a failure is thrown: the rollback must not race one still running.
    const failed = (await Promise.allSettled(items.slice(at, at + BATCH).map(step))).find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  }
}

/** Names one script claims at most (Redis runs nothing else meanwhile); a larger import claims them one at a time. */
const CLAIM_ALL_MAX = 50_000;

/**
 * Makes the staged keys live: all names in one atomic step where the backend can (`claimAll`: no reader
 * ever sees part of the import), else one at a time (the journal covers a stop part-way); NAME_TAKEN when
 * a name was taken meanwhile.
 */
async function commitAll(ctx: StoreContext, toWrite: readonly ExportedKey[], records: readonly StoredKey[], signal?: AbortSignal): Promise<void> {
  const taken = (i: number) =>
    new ServiceError("NAME_TAKEN", `Line ${toWrite[i].line} of the import: the name '${records[i].name}' was taken meanwhile. Nothing was imported`);
  const all = records.map((_, i) => i);
  const live = all.filter((i) => !records[i].graceUntil);
  const atOnce = ctx.atomic.claimAll && live.length <= CLAIM_ALL_MAX;
  if (atOnce) {
    await checkpoint(signal);
    const found = await ctx.atomic.claimAll!(live.map((i) => [ctx.entries.nameKey(records[i].name), records[i].id] as const));
    if (found !== null) throw taken(live[found]);
  }
  // Keys in a grace period (their grace entry), or every key where the backend cannot claim them at once.
  await inBatches(atOnce ? all.filter((i) => records[i].graceUntil) : all, signal, async (i) => {
    if (!(await commitKey(ctx, records[i]))) throw taken(i);
  });
}

const journalKey = ({ id, name, hash, graceUntil, retiring }: StoredKey): JournalKey =>
  ({ id, name, hash, ...(retiring ? { retiring } : {}), ...(graceUntil ? { grace: true as const } : {}) });

/**
 * Carries out `plan`, all or nothing, under the import's journal (`_import-journal.ts`): removes the keys it
 * replaces, stages every record and secret entry (no key yet: nothing points at them), appends the events,
 * then commits each key by claiming its name. Any failure, or `signal`, rolls it all back; a process killed
 * meanwhile leaves the journal, and the next open of the store rolls it back.
 */
async function applyImport(ctx: StoreContext, removeById: RemoveById, { toRemove, toWrite }: ImportPlan, change: ChangeOptions, signal?: AbortSignal): Promise<void> {
  if (!toRemove.size && !toWrite.length) return;
  await checkpoint(signal);
  if (!(await ctx.readRevision())) await ctx.bumpRevision();
  const restore: Restore = (record) => put(ctx, record, change);
  const replaced = (await Promise.all([...toRemove].map((id) => ctx.entries.readRecord(id)))).filter((r): r is StoredKey => r !== null);
  const records = toWrite.map((key) => restamped(key.record, ctx.now()));
  const running = await beginImport(ctx, records.map(journalKey), replaced, restore);
  try {
    for (const id of toRemove) {
      await checkpoint(signal);
      await removeById(id, "delete", change);
    }
    if (replaced.length) await running.writing();
    await inBatches(records, signal, (record) => stage(ctx, record));
    await inBatches(records, signal, (record) => ctx.audit("import", record, change));
    await commitAll(ctx, toWrite, records, signal);
    await running.finish();
  } catch (error) {
    let lost: string | undefined;
    try {
      lost = await running.rollBack(change);
    } catch (cause) {
      lost = `It could not be rolled back now (${(cause as Error).message}); the next command that opens the store rolls it back`;
    }
    if (lost && error instanceof ServiceError) throw new ServiceError(error.code, `${error.message}. ${lost}`, { cause: error });
    throw error;
  }
}

/** Imports `keys` into the store of `ctx`; `removeById` removes the keys an overwrite replaces. */
async function importRecords(ctx: StoreContext, removeById: RemoveById, keys: readonly ExportedKey[], options: ImportOptions = {}): Promise<ImportReport> {
  const { onConflict = "fail", dryRun = false, actor, signal } = options;
  const restore: Restore = (record) => put(ctx, record, { actor });
  // An import by a live process is in the way: its keys would read as conflicts, or vanish from under this one.
  if (!dryRun) await clearWay(ctx, restore, { actor });
  const plan = await planImport(ctx, keys, onConflict, signal);
  if (!dryRun) await applyImport(ctx, removeById, plan, { actor }, signal);
  return plan.report;
}

/**
 * The listings and transfers of the store of `ctx`; `removeById` removes keys an import replaces, `graced`
 * lists the keys in a grace period (both from `_remove.ts`).
 */
export function createTransfer(ctx: StoreContext, removeById: RemoveById, graced: () => Promise<StoredKey[]>) {
  return {
    liveRecords: () => liveRecords(ctx),
    livePages: () => livePages(ctx),
    /** Every key the store holds, live ones then those in a grace period, with their hashes. */
    exportRecords: async (): Promise<StoredKey[]> => [...(await liveRecords(ctx)), ...(await graced())],
    importRecords: (keys: readonly ExportedKey[], options?: ImportOptions) => importRecords(ctx, removeById, keys, options),
    /** Rolls back an import left by a dead process (`_import-journal.ts`); one still running is left alone. */
    recover: async (): Promise<void> => void (await recoverImport(ctx, (record) => put(ctx, record, {}))),
  };
}
