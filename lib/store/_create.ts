/**
 * Creating a key, and replacing one (`overwrite`, with or without a grace period): the record and secret
 * entry first, then the event, then the commit point on the name (see the top of key-store.ts).
 */
import { storedCredits } from "../core/credits.ts";
import type { CreatedKey, CreateKeyInput, StoredKey } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { isKeyId } from "../core/input.ts";
import { MAX_GRACE_MS, untilOf } from "../core/lifecycle.ts";
import { generateSecret, sha256Hex } from "../core/secret.ts";
import { checkKeyInput } from "./_input.ts";
import { publicView } from "./_entries.ts";
import { iso, type StoreContext } from "./_context.ts";
import type { ChangeOptions, CreateOptions } from "./types.ts";

type RemoveById = (id: string, action: "delete", change: ChangeOptions) => Promise<unknown>;

/**
 * Marks the live key `id` as replaced-with-grace until `until` (ms), before its name moves on. A key of
 * that name still in an earlier grace period is removed: a name has at most two working secrets. (A retiring
 * secret the key has from a rotation stops with the swap: it works only while its key is live.) Runs
 * under the key's lock, with the swap of the name (`swapName`).
 */
async function startGrace(ctx: StoreContext, removeById: RemoveById, id: string, until: number, change: ChangeOptions) {
  const { storage } = ctx;
  const { graceKey, readRecord, readId, live } = ctx.entries;
  const old = await live(await readRecord(id));
  if (!old) return;
  const earlier = await readId(graceKey(old.name));
  if (isKeyId(earlier) && earlier !== id) await removeById(earlier, "delete", change);
  await storage.setItem(`keys:${id}`, { ...old, graceUntil: iso(Math.min(until, untilOf(old.expiresAt))) });
  await storage.setItem(graceKey(old.name), id);
}

/**
 * Moves the name from `current` to `next`: its compare-and-swap (a plain swap where the backend has none).
 * Returns the id replaced, or false when the name no longer held `current`. With a grace period the key
 * is marked and the name swapped under one hold of the key's lock, which a rotation holds throughout: the
 * rotation then comes wholly before the two (the grace period keeps its new secret) or wholly after them
 * (it finds the key replaced, NOT_FOUND), never between them, where it would rewrite the marked record
 * without its grace time and hand out a secret that dies with the swap. A marking that fails fails the
 * overwrite (`onMarkFailed`), before the name moves.
 */
async function swapName(
  ctx: StoreContext,
  removeById: RemoveById,
  names: string,
  current: string,
  next: string,
  grace: { until: number; change: ChangeOptions } | undefined,
  onMarkFailed: (error: unknown) => Promise<never>,
): Promise<string | null | false> {
  const { atomic, bumpRevision } = ctx;
  const swap = async () => {
    // Bumped before the swap as well as after: a process killed between the two must not leave
    // other processes trusting remembered verifications of the key it replaced.
    await bumpRevision();
    if (!atomic.swapIf) return await atomic.swap(names, next);
    return (await atomic.swapIf(names, current, next)) ? current : false;
  };
  if (!grace || !isKeyId(current)) return swap();
  return atomic.exclusive(`keys:${current}`, async () => {
    await startGrace(ctx, removeById, current, grace.until, grace.change).catch(onMarkFailed);
    return swap();
  });
}

/** The new key's record and its secret entry, both durable before the name entry commits the key. */
async function writeRecord(ctx: StoreContext, input: CreateKeyInput): Promise<{ record: StoredKey; secret: string }> {
  const { storage, bumpRevision, readRevision, now } = ctx;
  const { discard } = ctx.entries;
  // The revision file exists from the first key on, so that a later revocation can bump it in place
  // without new space (a delete must work on a full disk). One read; a write only the first time.
  if (!(await readRevision())) await bumpRevision();
  const secret = generateSecret();
  const record: StoredKey = {
    id: crypto.randomUUID(),
    name: input.name,
    ...(input.description ? { description: input.description } : {}),
    roles: [...input.roles],
    permissions: input.permissions.map((p) => ({ resource: p.resource, actions: [...p.actions] })),
    createdAt: iso(now()),
    ...(input.expiresAt ? { expiresAt: input.expiresAt } : {}),
    ...(input.labels ? { labels: { ...input.labels } } : {}),
    ...(input.rateLimits?.length ? { rateLimits: input.rateLimits.map((l) => ({ ...l })) } : {}),
    ...(input.credits ? { credits: storedCredits(input.credits, now()) } : {}),
    ...(input.allowFrom?.length ? { allowFrom: [...input.allowFrom] } : {}),
    hash: sha256Hex(secret),
  };
  // They can be written together.
  await Promise.all([
    storage.setItem(`keys:${record.id}`, record),
    storage.setItem(`secrets:${record.hash}`, record.id),
  ]).catch(async (error) => {
    await discard(record, false).catch(() => {}); // one of the two may have been written (a full disk)
    throw error;
  });
  return { record, secret };
}

/**
 * Points the name at the new record: the commit point. The event names the key the name holds when it
 * is read; the commit is a compare-and-swap against that same value (or a claim of an absent name), so
 * the key replaced is always the key the event names. A race lost to another overwrite reads the name
 * again, with a new event. Returns the id of the key replaced, or null.
 */
async function commit(
  ctx: StoreContext,
  removeById: RemoveById,
  record: StoredKey,
  existing: string | null,
  options: CreateOptions,
  taken: () => ServiceError,
): Promise<string | null> {
  const { atomic, audit, now } = ctx;
  const { nameKey, readId, discard } = ctx.entries;
  const { overwrite = false, graceMs, actor } = options;
  const names = nameKey(record.name);
  let current = existing;
  const unwritten = async (error: unknown): Promise<never> => {
    await discard(record, false).catch(() => {}); // never committed: its secret was never handed out
    throw error;
  };
  for (let attempt = 1; ; attempt++) {
    const replacing = overwrite && isKeyId(current) ? current : undefined;
    await audit(replacing ? "overwrite" : "create", record, { actor }, replacing ? { replaced: replacing } : undefined).catch(unwritten);
    if (current === null) {
      if (await atomic.claim(names, record.id)) return null;
    } else {
      const grace = replacing && graceMs ? { until: now() + graceMs, change: { actor } } : undefined;
      const replaced = await swapName(ctx, removeById, names, current, record.id, grace, unwritten);
      if (replaced !== false) return replaced;
    }
    if (!overwrite || attempt >= 64) {
      await discard(record, false);
      if (!overwrite) throw taken();
      throw new ServiceError("STORE_UNAVAILABLE", `Key store unavailable: the name '${record.name}' kept changing while being overwritten`);
    }
    current = await readId(names);
  }
}

/**
 * Removes the key an overwrite replaced, unless a rename moved it to another name first (update then
 * overwrite: it lives on there) or it is in the grace period this overwrite gave it.
 */
async function dropReplaced(ctx: StoreContext, previous: string, graceMs: number | undefined) {
  const { atomic, bumpRevision } = ctx;
  const { readRecord, live, inGrace, discard } = ctx.entries;
  await bumpRevision();
  await atomic.exclusive(`keys:${previous}`, async () => {
    const replaced = await readRecord(previous);
    if (await live(replaced)) return;
    if (graceMs && (await inGrace(replaced))) return;
    await discard(replaced);
  });
}

/** Creates keys in the store of `ctx`; `removeById` removes a key in an earlier grace period of the name. */
export function createCreate(ctx: StoreContext, removeById: RemoveById) {
  const { entries, debug, now } = ctx;
  const { nameKey, readId } = entries;

  return async (rawInput: unknown, options: CreateOptions = {}): Promise<CreatedKey> => {
    const { overwrite = false, graceMs } = options;
    const input = checkKeyInput(rawInput, now()); // the CLI's and GraphQL's rules, whoever calls
    if (graceMs !== undefined && (!overwrite || !(graceMs > 0 && graceMs <= MAX_GRACE_MS))) {
      throw new ServiceError("INVALID_INPUT", overwrite ? "A grace period is more than 0 and at most 24h" : "A grace period needs --overwrite");
    }
    const started = Date.now();
    const taken = () =>
      new ServiceError("NAME_TAKEN", `API key with name '${input.name}' already exists. Use --overwrite to replace it.`);
    const existing = await readId(nameKey(input.name));
    if (!overwrite && existing !== null) throw taken();
    const { record, secret } = await writeRecord(ctx, input);
    const previous = await commit(ctx, removeById, record, existing, options, taken);
    if (previous && previous !== record.id) await dropReplaced(ctx, previous, graceMs);
    if (overwrite) debug(`create: ${previous ? `replaced key ${previous} with` : "stored"} ${record.id}`);
    debug(`create: key ${record.id} committed in ${Date.now() - started} ms`);
    return { ...publicView(record), key: secret };
  };
}
