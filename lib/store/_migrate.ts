/**
 * Bringing a store an older release wrote to the current layout, when it is opened (`createUpgradedKeyStore`).
 *
 * Rotation twins. Before, a rotation with a grace period kept the old secret as a twin: a copy of the key's
 * record under a new id, with `graceUntil`, held by the name's grace entry, its secret's entry moved to it.
 * Nothing that changed the key changed the twin (a disable, a role cut) and the twin had counters of its
 * own (credits, rate limits). Now a rotated key is one record with two secrets (`retiring`, `_rotate.ts`),
 * so each twin is folded into its key. A twin is told from the key an overwrite left in its grace period
 * (a different key, kept as it is) by what a rotation copied: the name's live key has the twin's name and
 * its `createdAt`, to the millisecond, under another id; an overwrite's new key is created after the key it
 * replaces. A twin whose key was renamed since is not found by name and stays as it is until its period ends.
 *
 * Each fold holds the key's lock and the twin's and is idempotent, in an order that keeps the old secret
 * working at every step and lets a crash re-run cleanly:
 *   1. the key's record gains the twin's hash and time as its `retiring` secret, and the twin's use counts and
 *      last use (skipped when it has that secret already); the twin's own credit count is not carried over;
 *   2. the old secret's entry points at the key (it authenticates through the key from here on);
 *   3. the twin's record is removed, then its grace entry (a grace entry left pointing at nothing is
 *      dropped on the re-run).
 * When every grace entry has been looked at, `meta:format` records the layout, so later opens cost one read.
 */
import { isKeyId } from "../core/input.ts";
import type { StoredKey } from "../core/model.ts";
import type { StoreContext } from "./_context.ts";

const FORMAT = "meta:format";
/** The layout this release writes: 2, a rotated key is one record with two secrets. */
const CURRENT = "2";

/** True when `twin` is what a rotation of `key` left: the same key under another id. */
const isRotationTwin = (twin: StoredKey, key: StoredKey) =>
  twin.id !== key.id && !!twin.graceUntil && twin.name === key.name && twin.createdAt === key.createdAt;

/** The key's use with the twin's added: its counts per day and in all, and the later last use. */
function usedAlso(key: StoredKey, twin: StoredKey): Pick<StoredKey, "usage" | "lastUsedAt"> {
  const lastUsedAt = [key.lastUsedAt, twin.lastUsedAt].filter((at): at is string => !!at).sort().at(-1);
  if (!twin.usage) return lastUsedAt ? { lastUsedAt } : {};
  const days = { ...key.usage?.days };
  for (const [day, n] of Object.entries(twin.usage.days)) days[day] = (days[day] ?? 0) + n;
  const sorted = Object.fromEntries(Object.entries(days).sort(([a], [b]) => (a < b ? -1 : 1)));
  return { ...(lastUsedAt ? { lastUsedAt } : {}), usage: { total: (key.usage?.total ?? 0) + twin.usage.total, days: sorted } };
}

/** Folds the twin the grace entry `entry` holds into its key, if it is a rotation's; true when it did. */
async function foldTwin(ctx: StoreContext, entry: string): Promise<boolean> {
  const { storage, atomic, entries, bumpRevision } = ctx;
  const twinId = await entries.readId(entry);
  if (!isKeyId(twinId)) return false;
  if (!(await storage.hasItem(`keys:${twinId}`))) return await atomic.takeIf(entry, twinId) && false; // step 3 cut short
  const first = await entries.readRecord(twinId);
  const keyId = first && (await entries.readId(entries.nameKey(first.name)));
  if (!first || !isKeyId(keyId) || keyId === twinId) return false;
  return atomic.exclusive(`keys:${keyId}`, () => atomic.exclusive(`keys:${twinId}`, async () => {
    const [twin, key] = [await entries.readRecord(twinId), await entries.live(await entries.readRecord(keyId))];
    if (!twin || !key || !isRotationTwin(twin, key) || (await entries.readId(entry)) !== twinId) return false;
    if (key.retiring && key.retiring.hash !== twin.hash) return false; // a secret retiring already: leave the twin to its end
    if (!key.retiring) await storage.setItem(`keys:${key.id}`, { ...key, ...usedAlso(key, twin), retiring: { hash: twin.hash, until: twin.graceUntil! } });
    if ((await entries.readId(`secrets:${twin.hash}`)) === twinId) await storage.setItem(`secrets:${twin.hash}`, key.id);
    await bumpRevision(); // a verification of the old secret remembered as the twin is checked again
    await storage.removeItem(`keys:${twinId}`);
    await atomic.takeIf(entry, twinId);
    return true;
  }));
}

/** Brings the store of `ctx` to the current layout; returns how many rotation twins it folded. */
export async function migrateStore(ctx: StoreContext): Promise<number> {
  const { storage, atomic, debug } = ctx;
  if (String(await storage.getItem(FORMAT)) === CURRENT) return 0;
  if (!(await atomic.hasAny("names"))) return 0; // no key: nothing to fold, and nothing written to an empty store
  let folded = 0;
  for (const entry of await storage.getKeys("grace")) if (await foldTwin(ctx, entry)) folded++;
  await storage.setItem(FORMAT, CURRENT);
  if (folded) debug(`store: folded ${folded} rotated key${folded === 1 ? "" : "s"}' old secret${folded === 1 ? "" : "s"} into ${folded === 1 ? "its key" : "their keys"}`);
  return folded;
}
