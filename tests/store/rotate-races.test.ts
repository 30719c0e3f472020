// A rotation racing an overwrite with a grace period of the same key, in a loop through separate store
// instances (as separate processes or hosts would be) in memory, on files and on a real Redis. Whatever
// the interleaving, a rotation that reports success hands out a secret that authenticates (the overwrite's
// grace period then covers it), and one that loses says NOT_FOUND; the overwrite always succeeds.
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceError } from "../../lib/core/errors.ts";
import type { CreatedKey } from "../../lib/core/model.ts";
import { createKeyStore, createLocalAtomicIndex, type KeyStore } from "../../lib/store/key-store.ts";
import { storeInstances } from "../helpers/store-instances.ts";
import { input } from "../helpers/keys.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";

/** Rounds per backend and case; ROTATE_RACE_ROUNDS=200 for a measurement. */
const ROUNDS = Number(process.env.ROTATE_RACE_ROUNDS ?? 40);
/** Starts `fn` after `ms` milliseconds. */
const jittered = <T>(ms: number, fn: () => Promise<T>): Promise<T> => new Promise((done) => setTimeout(done, ms)).then(fn);

let redis: RedisServer;
const cleanups: (() => unknown)[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.stop();
});

/** Three store instances over one fresh store: a rotator, an overwriter and an observer. */
const backends = (kind: "memory" | "fs" | "redis") => storeInstances(kind, { count: 3, redisUrl: redis.url, cleanups });
const KINDS = ["memory", "fs", "redis"] as const;

describe.each(KINDS)("a rotation racing an overwrite with grace (%s)", (kind) => {
  it.each([
    ["without", undefined],
    ["with", 60_000],
  ])(`rotate %s a grace period: a reported rotation's secret authenticates, a lost one is NOT_FOUND (${ROUNDS} rounds)`, async (_, rotateGrace) => {
    const [rotator, overwriter, observer] = await backends(kind);
    const outcomes = { rotatedFirst: 0, replacedFirst: 0, deadSecrets: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const name = `raced ${round}`;
      const original = await observer.create(input(name));
      const [rotation, overwrite] = await Promise.allSettled([
        // Either may start first, by up to 6 ms: the rotation lands before, inside and after the overwrite's steps.
        jittered(round % 7, () => rotator.rotate(original.id, { graceMs: rotateGrace })),
        jittered(Math.floor(round / 7) % 3, () => overwriter.create(input(name), { overwrite: true, graceMs: 60_000 })),
      ]);
      expect(overwrite.status).toBe("fulfilled");
      const fresh = (overwrite as PromiseFulfilledResult<CreatedKey>).value;
      expect((await observer.verify(fresh.key))?.id).toBe(fresh.id);
      expect((await observer.getByName(name))?.id).toBe(fresh.id);
      if (rotation.status === "fulfilled") {
        outcomes.rotatedFirst++;
        // The rotation came first: the overwrite's grace period covers the rotated secret.
        const rotated = await observer.verify(rotation.value.key);
        if (rotated?.id !== original.id) outcomes.deadSecrets++;
        else expect(rotated.graceUntil).toBeDefined();
      } else {
        // The overwrite came first: the original key is in its grace period, which a rotation refuses.
        outcomes.replacedFirst++;
        expect((rotation.reason as ServiceError).code).toBe("NOT_FOUND");
        expect((await observer.verify(original.key))?.id).toBe(original.id);
      }
      // A name has at most two working secrets: the new key's and one in grace.
      let working = 0;
      for (const k of [original, fresh, ...(rotation.status === "fulfilled" ? [rotation.value] : [])]) if (await observer.verify(k.key)) working++;
      expect(working).toBeLessThanOrEqual(2);
    }
    console.info(`rotate-races (${kind}, rotate ${_} grace): ${JSON.stringify(outcomes)}`);
    expect(outcomes.deadSecrets).toBe(0);
  });
});

describe("a rotation in the middle of an overwrite with grace (memory, step by step)", () => {
  it("a rotation made after the overwrite marked the key for grace and before it moved the name is refused or kept working", async () => {
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    let release!: () => void;
    let reached!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const paused = new Promise<void>((resolve) => (reached = resolve));
    // The overwriting instance pauses at its compare-and-swap of the name: after it marked the key for grace.
    const swapIf: typeof atomic.swapIf = async (...args) => (reached(), await gate, atomic.swapIf!(...args));
    const overwriter = createKeyStore({ storage, atomic: { ...atomic, swapIf } });
    const rotator = createKeyStore({ storage, atomic });
    const original = await rotator.create(input("paused"));
    const overwriting = overwriter.create(input("paused"), { overwrite: true, graceMs: 60_000 });
    await paused;
    expect(await storage.getItem(`keys:${original.id}`)).toHaveProperty("graceUntil");
    const rotating = rotator.rotate(original.id);
    const early = await Promise.race([rotating.then(() => "rotated", () => "refused"), new Promise((done) => setTimeout(done, 200, "waiting"))]);
    release();
    const [rotation, overwrite] = await Promise.allSettled([rotating, overwriting]);
    expect(overwrite.status).toBe("fulfilled");
    // The rotation waits for the overwrite to move the name, then finds the key in its grace period.
    expect(early).toBe("waiting");
    expect(rotation).toMatchObject({ status: "rejected", reason: { code: "NOT_FOUND", message: expect.stringMatching(/grace period\): it can be deleted, not rotated/) } });
    expect((await rotator.verify(original.key))?.graceUntil).toBeDefined();
  });
});
