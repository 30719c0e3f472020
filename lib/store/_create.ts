/**
 * Creating a key, and replacing one (`overwrite`, with or without a grace period): the record and secret
 * entry first, then the event, then the commit point on the name (see the top of key-store.ts).
 */
import type { CreatedKey, StoredKey } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { isKeyId } from "../core/input.ts";
import { MAX_GRACE_MS, untilOf } from "../core/lifecycle.ts";
import { generateSecret, sha256Hex } from "../core/secret.ts";
import { checkKeyInput } from "./_input.ts";
import { publicView } from "./_entries.ts";
import { iso, type StoreContext } from "./_context.ts";
import type { ChangeOptions, CreateOptions } from "./types.ts";

export function createCreate(ctx: StoreContext, removeById: (id: string, action: "delete", change: ChangeOptions) => Promise<unknown>) {
  const { storage, atomic, entries, audit, bumpRevision, readRevision, debug, now } = ctx;
  const { nameKey, graceKey, readRecord, readId, live, inGrace, discard } = entries;

  /**
   * Marks the live key `id` as replaced-with-grace until `until` (ms), before its name moves on. A key of
   * that name still in an earlier grace period is removed: a name has at most two working secrets.
   */
  async function startGrace(id: string, until: number, change: ChangeOptions) {
    await atomic.exclusive(`keys:${id}`, async () => {
      const old = await live(await readRecord(id));
      if (!old) return;
      const earlier = await readId(graceKey(old.name));
      if (isKeyId(earlier) && earlier !== id) await removeById(earlier, "delete", change);
      await storage.setItem(`keys:${id}`, { ...old, graceUntil: iso(Math.min(until, untilOf(old.expiresAt))) });
      await storage.setItem(graceKey(old.name), id);
    });
  }


  return async (rawInput: unknown, { overwrite = false, graceMs, actor }: CreateOptions = {}): Promise<CreatedKey> => {
    const input = checkKeyInput(rawInput, now()); // the CLI's and GraphQL's rules, whoever calls
    if (graceMs !== undefined && (!overwrite || !(graceMs > 0 && graceMs <= MAX_GRACE_MS))) {
      throw new ServiceError("INVALID_INPUT", overwrite ? "A grace period is more than 0 and at most 24h" : "A grace period needs --overwrite");
    }
    const started = Date.now();
    const names = nameKey(input.name);
    const taken = () =>
      new ServiceError("NAME_TAKEN", `API key with name '${input.name}' already exists. Use --overwrite to replace it.`);
    const existing = await readId(names);
    if (!overwrite && existing !== null) throw taken();

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
      hash: sha256Hex(secret),
    };
    // Both entries are durable before the name entry commits the key; they can be written together.
    await Promise.all([
      storage.setItem(`keys:${record.id}`, record),
      storage.setItem(`secrets:${record.hash}`, record.id),
    ]).catch(async (error) => {
      await discard(record).catch(() => {}); // one of the two may have been written (a full disk)
      throw error;
    });
    // The event names the key the name holds when it is read; the commit is a compare-and-swap against that
    // same value (or a claim of an absent name), so the key replaced is always the key the event names. A
    // race lost to another overwrite reads the name again, with a new event (see the top of this file).
    let current = existing;
    let previous: string | null = null;
    for (let attempt = 1; ; attempt++) {
      try {
        const replacing = overwrite && isKeyId(current) ? current : undefined;
        await audit(replacing ? "overwrite" : "create", record, { actor }, replacing ? { replaced: replacing } : undefined);
        if (replacing && graceMs) await startGrace(replacing, now() + graceMs, { actor });
      } catch (error) {
        await discard(record).catch(() => {});
        throw error;
      }
      if (current === null) {
        if (await atomic.claim(names, record.id)) break;
      } else {
        // Bumped before the swap as well as after: a process killed between the two must not leave
        // other processes trusting remembered verifications of the key it replaced.
        await bumpRevision();
        if (!atomic.swapIf) {
          previous = await atomic.swap(names, record.id);
          break;
        }
        if (await atomic.swapIf(names, current, record.id)) {
          previous = current;
          break;
        }
      }
      if (!overwrite || attempt >= 64) {
        await discard(record);
        if (!overwrite) throw taken();
        throw new ServiceError("STORE_UNAVAILABLE", `Key store unavailable: the name '${input.name}' kept changing while being overwritten`);
      }
      current = await readId(names);
    }
    if (previous && previous !== record.id) {
      await bumpRevision();
      // Not if a rename moved it to another name first (update then overwrite): it lives on there.
      // Nor if it is in the grace period this overwrite gave it.
      await atomic.exclusive(`keys:${previous}`, async () => {
        const replaced = await readRecord(previous);
        if (await live(replaced)) return;
        if (graceMs && (await inGrace(replaced))) return;
        await discard(replaced);
      });
    }
    if (overwrite) debug(`create: ${previous ? `replaced key ${previous} with` : "stored"} ${record.id}`);
    debug(`create: key ${record.id} committed in ${Date.now() - started} ms`);
    return { ...publicView(record), key: secret };
  };
}
