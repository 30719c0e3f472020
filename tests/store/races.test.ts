// Races between operations on one key, run in a tight loop through separate store instances (as separate
// processes or hosts would be) on files and on a real Redis: whatever the interleaving, every secret an
// operation returns authenticates, and every listed key is whole (its name, record and secret agree).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "../../lib/core/errors.ts";
import type { CreatedKey, CreateKeyInput } from "../../lib/core/model.ts";
import type { KeyStore } from "../../lib/store/key-store.ts";
import { storeInstances } from "../helpers/store-instances.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";

const ROUNDS = 60;
/** Starts `fn` after 0 to 4 ms, so the rounds cover every interleaving rather than one. */
const jittered = <T>(round: number, fn: () => Promise<T>): Promise<T> =>
  new Promise((done) => setTimeout(done, round % 5)).then(fn);
const input = (name: string): CreateKeyInput => ({ name, roles: ["VIEWER"], permissions: [] });

let redis: RedisServer;
const cleanups: (() => unknown)[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.stop();
});

/** Three store instances over one fresh store: two racers and an observer. */
const backends = (kind: "memory" | "fs" | "redis") => storeInstances(kind, { count: 3, redisUrl: redis.url, cleanups });
const KINDS = ["fs", "redis"] as const;

/** Every listed key is whole: its name finds it, and it is the only key of that name. */
async function expectWhole(store: KeyStore): Promise<void> {
  const listed = await store.list();
  expect(new Set(listed.map((k) => k.name)).size).toBe(listed.length);
  for (const key of listed) expect((await store.getByName(key.name))?.id).toBe(key.id);
}

describe.each(KINDS)("races on one key (%s)", (kind) => {
  it(`an overwrite racing a rename of the same key: both secrets that are reported live authenticate (${ROUNDS} rounds)`, async () => {
    const [renamer, overwriter, observer] = await backends(kind);
    const outcomes = { renamed: 0, replacedFirst: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const before = `old ${round}`;
      const after = `new ${round}`;
      const original = await observer.create(input(before));
      const [renamed, overwritten] = await Promise.allSettled([
        renamer.update(original.id, { name: after }),
        jittered(round, () => overwriter.create(input(before), { overwrite: true })),
      ]);
      // The overwrite always succeeds, and its secret always authenticates as the key named `before`.
      expect(overwritten.status).toBe("fulfilled");
      const fresh = (overwritten as PromiseFulfilledResult<CreatedKey>).value;
      expect((await observer.verify(fresh.key))?.id).toBe(fresh.id);
      expect((await observer.getByName(before))?.id).toBe(fresh.id);
      if (renamed.status === "fulfilled") {
        // The rename came first: the original key lives on under its new name, whole.
        outcomes.renamed++;
        expect((await observer.verify(original.key))?.name).toBe(after);
        expect((await observer.getByName(after))?.id).toBe(original.id);
      } else {
        // The overwrite came first: the original key is gone entirely, and its new name is free.
        outcomes.replacedFirst++;
        expect((renamed.reason as ServiceError).code).toBe("NOT_FOUND");
        expect(await observer.verify(original.key)).toBeNull();
        expect(await observer.getByName(after)).toBeNull();
        expect((await observer.create(input(after))).name).toBe(after);
      }
      await expectWhole(observer);
    }
    console.info(`races (${kind}): ${JSON.stringify(outcomes)}`);
  });

  it(`a delete racing a rename of the same key: a key that is still listed authenticates, a deleted one never does (${ROUNDS} rounds)`, async () => {
    const [renamer, deleter, observer] = await backends(kind);
    for (let round = 0; round < ROUNDS; round++) {
      const original = await observer.create(input(`doomed ${round}`));
      const [, deleted] = await Promise.allSettled([
        renamer.update(original.id, { name: `moved ${round}` }),
        jittered(round, () => deleter.deleteByName(`doomed ${round}`)),
      ]);
      const gone = deleted.status === "fulfilled" && deleted.value !== null;
      const listed = (await observer.list()).some((k) => k.id === original.id);
      // Reported deleted means revoked, whatever the rename did; not deleted means it lives on, whole.
      expect(listed).toBe(!gone);
      expect((await observer.verify(original.key))?.id ?? null).toBe(gone ? null : original.id);
      await expectWhole(observer);
    }
  });

  it(`two renames of one key at once leave it under exactly one name, with its secret working (${ROUNDS} rounds)`, async () => {
    const [first, second, observer] = await backends(kind);
    for (let round = 0; round < ROUNDS; round++) {
      const original = await observer.create(input(`twice ${round}`));
      await Promise.allSettled([
        first.update(original.id, { name: `left ${round}` }),
        jittered(round, () => second.update(original.id, { name: `right ${round}` })),
      ]);
      const names = (await observer.list()).filter((k) => k.id === original.id).map((k) => k.name);
      expect(names).toHaveLength(1);
      expect((await observer.verify(original.key))?.name).toBe(names[0]);
      const other = names[0] === `left ${round}` ? `right ${round}` : `left ${round}`;
      expect(await observer.getByName(other)).toBeNull();
      expect(await observer.getByName(`twice ${round}`)).toBeNull();
    }
  });
});
