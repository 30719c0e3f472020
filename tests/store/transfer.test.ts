// Export and import through the library: a store's keys go to JSON lines and back into another store with
// every secret still working; a file that is malformed, tampered with or from a newer format is refused
// whole, naming its line, and the target store is left exactly as it was.
import { describe, expect, it } from "vitest";
import { createStorage } from "unstorage";
import { type AtomicIndex, createKeyStore, createLocalAtomicIndex, type KeyStore } from "../../lib/store/key-store.ts";
import { exportLines, parseExport } from "../../lib/store/transfer.ts";
import { createMemoryAuditLog } from "../../lib/store/audit.ts";
import type { AuditEvent } from "../../lib/core/model.ts";
import { isServiceError } from "../../lib/core/errors.ts";
import { generateSecret } from "../../lib/core/secret.ts";

const text = (lines: Iterable<string>) => [...lines].join("");

async function source() {
  const store = createKeyStore();
  const deploy = await store.create({ name: "deploy key", description: "the deployer", roles: ["ADMIN"], permissions: [], expiresAt: new Date(Date.now() + 90 * 86_400_000).toISOString() });
  const old = await store.create({ name: "ci", roles: [], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] });
  const ci = await store.create({ name: "ci", roles: ["VIEWER"], permissions: [] }, { overwrite: true, graceMs: 600_000 });
  return { store, secrets: { deploy: deploy.key, old: old.key, ci: ci.key } };
}

/** The refusal a promise ends in: its code and message. */
async function refusal(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    if (isServiceError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a refusal");
}
const refusalOf = (fn: () => unknown) => refusal(Promise.resolve().then(fn));

describe("export and import", () => {
  it("carries every key, its settings and its grace period, and every secret verifies in the new store", async () => {
    const { store, secrets } = await source();
    const file = text(exportLines(await store.exportRecords(), await store.audit()));
    for (const secret of Object.values(secrets)) expect(file).not.toContain(secret);
    const target = createKeyStore();
    const report = await target.importRecords(parseExport(file).keys);
    expect(report.imported).toHaveLength(3);
    expect(await target.list()).toEqual(await store.list());
    expect((await target.verify(secrets.deploy))?.name).toBe("deploy key");
    expect((await target.verify(secrets.ci))?.roles).toEqual(["VIEWER"]);
    expect((await target.verify(secrets.old))?.graceUntil).toBeDefined(); // the replaced secret, still in its grace period
    expect((await target.audit()).map((event) => event.action)).toEqual(["import", "import", "import"]);
  });

  it("carries a key rotated with a grace period as one key with both secrets, and refuses a retiring secret of years", async () => {
    const store = createKeyStore();
    const old = await store.create({ name: "rolled", roles: ["ADMIN"], permissions: [] });
    const rotated = await store.rotate(old.id, { graceMs: 600_000 });
    const file = text(exportLines(await store.exportRecords()));
    expect(file).not.toContain(old.key);
    const target = createKeyStore();
    expect((await target.importRecords(parseExport(file).keys)).imported).toHaveLength(1);
    expect(await target.list()).toEqual(await store.list());
    expect(await target.verify(old.key)).toMatchObject({ id: old.id, graceUntil: rotated.retiringUntil });
    expect(await target.verify(rotated.key)).toMatchObject({ id: old.id });
    await target.update(old.id, { disabled: true });
    for (const secret of [old.key, rotated.key]) expect(await target.verify(secret)).toBeNull();
    // The old secret's hash is the key's too: a file that gives it to another key is a conflict.
    const lines = file.trimEnd().split("\n");
    const far = JSON.parse(lines[1]);
    far.retiring.until = "2099-01-01T00:00:00.000Z";
    expect((await refusalOf(() => parseExport([lines[0], JSON.stringify(far)].join("\n") + "\n"))).message).toMatch(/^Line 2 of the import: retiring.until is more than 24 hours away/);
    const other = createKeyStore();
    const taken = await other.importRecords(parseExport(file).keys);
    const stolen = { ...JSON.parse(lines[1]), id: crypto.randomUUID(), name: "thief", hash: "0".repeat(64) };
    expect(taken.imported).toHaveLength(1);
    expect((await refusal(other.importRecords(parseExport([lines[0], JSON.stringify(stolen)].join("\n") + "\n").keys))).message).toMatch(/its secret is already key/);
  });

  it("carries a disabled key still disabled, with its reason, and a key's use counts", async () => {
    const store = createKeyStore();
    const paused = await store.create({ name: "paused", roles: ["VIEWER"], permissions: [] });
    await store.update(paused.id, { disabled: true, disabledReason: "contract paused" });
    await store.recordUse(new Map([[paused.id, { at: Date.now(), days: { [new Date().toISOString().slice(0, 10)]: 4 } }]]));
    const file = text(exportLines(await store.exportRecords()));
    const target = createKeyStore();
    await target.importRecords(parseExport(file).keys);
    expect(await target.get(paused.id)).toMatchObject({ disabled: true, disabledReason: "contract paused" });
    expect(await target.verifyDetailed(paused.key)).toMatchObject({ code: "DISABLED" });
    expect(await target.usage(paused.id)).toEqual(await store.usage(paused.id));
    expect((await target.usage(paused.id))?.total).toBe(4);
    const forged = file.replace('"disabledReason":"contract paused"', `"disabledReason":"bell\\u0007"`);
    expect(forged).not.toBe(file);
    expect((await refusalOf(() => parseExport(forged))).message).toMatch(/disabledReason is not a valid reason/);
  });

  it("carries a key's IP allow-list, through a rotation too, and refuses one that is not in stored form", async () => {
    const store = createKeyStore();
    const made = await store.create({ name: "office", roles: ["VIEWER"], permissions: [], allowFrom: ["192.0.2.7", "::ffff:10.1.0.0/112", "2001:DB8::/32"] });
    expect(made.allowFrom).toEqual(["192.0.2.7/32", "10.1.0.0/16", "2001:db8::/32"]);
    const rotated = await store.rotate(made.id);
    expect(rotated.allowFrom).toEqual(made.allowFrom);
    const file = text(exportLines(await store.exportRecords()));
    const target = createKeyStore();
    await target.importRecords(parseExport(file).keys);
    expect((await target.verify(rotated.key))?.allowFrom).toEqual(["192.0.2.7/32", "10.1.0.0/16", "2001:db8::/32"]);
    const widened = file.replace('"192.0.2.7/32"', '"192.0.2.7/8"');
    expect(widened).not.toBe(file);
    expect((await refusalOf(() => parseExport(widened))).message).toMatch(/^Line 2 of the import: allowFrom is not in stored form/);
    const garbled = file.replace('"192.0.2.7/32"', '"192.0.2.300/32"');
    expect((await refusalOf(() => parseExport(garbled))).message).toMatch(/^Line 2 of the import: Invalid allow-list entry: "192.0.2.300\/32" is not an IP address/);
    expect((await target.update(made.id, { allowFrom: [] })).allowFrom).toBeUndefined();
  });

  it("refuses a conflict by default and changes nothing; skip leaves the store's key; overwrite replaces it", async () => {
    const { store, secrets } = await source();
    const keys = parseExport(text(exportLines(await store.exportRecords()))).keys;
    const target = createKeyStore();
    const mine = await target.create({ name: "deploy key", roles: ["GUEST"], permissions: [] });
    const refused = await refusal(target.importRecords(keys));
    expect(refused.code).toBe("NAME_TAKEN");
    expect(refused.message).toMatch(/^Line \d+ of the import: the name 'deploy key' is taken by key /);
    expect((await target.list()).map((key) => key.name)).toEqual(["deploy key"]);

    expect((await target.importRecords(keys, { onConflict: "skip", dryRun: true })).skipped).toHaveLength(1);
    expect(await target.list()).toHaveLength(1); // a dry run changes nothing
    const skipped = await target.importRecords(keys, { onConflict: "skip" });
    expect(skipped.skipped.map((key) => key.name)).toEqual(["deploy key"]);
    expect((await target.verify(mine.key))?.name).toBe("deploy key");
    expect(await target.verify(secrets.deploy)).toBeNull();

    const again = createKeyStore();
    const theirs = await again.create({ name: "deploy key", roles: ["GUEST"], permissions: [] });
    await again.importRecords(keys, { onConflict: "overwrite" });
    expect(await again.verify(theirs.key)).toBeNull();
    expect((await again.verify(secrets.deploy))?.roles).toEqual(["ADMIN"]);
  });

  it("an overwrite that fails part-way puts back the keys it replaced: all or nothing", async () => {
    const { store } = await source();
    const keys = parseExport(text(exportLines(await store.exportRecords()))).keys;
    const storage = createStorage();
    const target = createKeyStore({ storage });
    const mine = await target.create({ name: "deploy key", roles: ["GUEST"], permissions: [], description: "the target's own" });
    const before = await target.list();
    // The disk fills (or another writer takes a name) while the file's last key is written.
    const last = keys.at(-1)!.record.id;
    const setItem = storage.setItem.bind(storage);
    storage.setItem = (async (key: string, value: unknown) => {
      if (key === `keys:${last}`) throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
      return setItem(key, value as never);
    }) as typeof storage.setItem;
    const refused = await refusal(target.importRecords(keys, { onConflict: "overwrite" }));
    expect(refused.code).toBe("STORE_UNAVAILABLE");
    expect(await target.list()).toEqual(before); // the store's own key is back, the file's keys are gone
    expect((await target.verify(mine.key))?.description).toBe("the target's own");
  });

  /**
   * A store whose claims of names call `onClaim` first (the nth claim: 1, 2, ...), and an export of `count`
   * keys. `atOnce`: the store commits an import's names in one step (`claimAll`, as on Redis), else one at a
   * time (as on files).
   */
  async function watched(count: number, atOnce: boolean, onClaim: (n: number) => Promise<void> | void, onEvent?: (event: AuditEvent) => Promise<void>) {
    const from = createKeyStore();
    for (let i = 0; i < count; i++) await from.create({ name: `key ${i}`, roles: ["GUEST"], permissions: [] });
    const keys = parseExport(text(exportLines(await from.exportRecords()))).keys;
    const storage = createStorage();
    const local = createLocalAtomicIndex(storage);
    let claims = 0;
    const atomic: AtomicIndex = {
      ...local,
      claim: async (key, value) => (key.startsWith("names:") && (await onClaim(++claims)), local.claim(key, value)),
      claimAll: atOnce ? async (entries) => (await onClaim(++claims), local.claimAll!(entries)) : undefined,
    };
    const log = createMemoryAuditLog();
    const audit = { ...log, append: async (event: AuditEvent) => (await onEvent?.(event), log.append(event)) };
    return { keys, store: createKeyStore({ storage, atomic, audit }) };
  }

  it("rolls back an import cancelled by its signal mid-commit, keys it replaced included, and rejects with CANCELLED", async () => {
    const controller = new AbortController();
    const { keys, store } = await watched(600, false, (n) => void (n === 100 && controller.abort())); // some names claimed by then
    const mine = await store.create({ name: "key 7", roles: ["VIEWER"], permissions: [] });
    const refused = await refusal(store.importRecords(keys, { onConflict: "overwrite", signal: controller.signal }));
    expect(refused).toEqual({ code: "CANCELLED", message: "Cancelled; nothing was changed" });
    expect((await store.list()).map((key) => [key.name, key.id])).toEqual([["key 7", mine.id]]);
    expect((await store.verify(mine.key))?.roles).toEqual(["VIEWER"]);
    expect(await store.importRecords(keys, { onConflict: "overwrite" })).toMatchObject({ replaced: [{ name: "key 7" }] }); // nothing left in the way
    expect(await store.list()).toHaveLength(600);
  });

  for (const atOnce of [false, true]) {
    it(`imports nothing when a name of the file is created meanwhile, and never clobbers the key created (names claimed ${atOnce ? "at once" : "one at a time"})`, async () => {
      let created: Promise<Awaited<ReturnType<KeyStore["create"]>>> | undefined;
      // Once the import has staged its keys, before it commits any.
      const { keys, store } = await watched(150, atOnce, () => {}, async (event) => {
        if (event.action === "import") await (created ??= store.create({ name: "key 120", roles: ["ADMIN"], permissions: [] }));
      });
      const refused = await refusal(store.importRecords(keys));
      const line = keys.find((key) => key.record.name === "key 120")!.line;
      expect(refused).toEqual({ code: "NAME_TAKEN", message: `Line ${line} of the import: the name 'key 120' was taken meanwhile. Nothing was imported` });
      const mine = await created!;
      expect((await store.list()).map((key) => key.id)).toEqual([mine.id]);
      expect((await store.verify(mine.key))?.roles).toEqual(["ADMIN"]);
    });
  }

  it("imports a rotated key with both its secrets, and a cancelled import takes both back: no secret of the file is left", async () => {
    const from = createKeyStore();
    const made = await from.create({ name: "rotated", roles: ["ADMIN"], permissions: [] });
    await from.rotate(made.id, { graceMs: 60 * 60 * 1000 });
    const keys = parseExport(text(exportLines(await from.exportRecords()))).keys;
    expect(keys[0].record.retiring).toBeDefined();
    const controller = new AbortController();
    const storage = createStorage();
    const log = createMemoryAuditLog();
    // Once the import has staged both secrets' entries and written its event, it is cancelled: the journal undoes it.
    const audit = { ...log, append: async (event: AuditEvent) => (event.action === "import" && controller.abort(), log.append(event)) };
    const target = createKeyStore({ storage, audit });
    expect((await refusal(target.importRecords(keys, { signal: controller.signal }))).code).toBe("CANCELLED");
    expect(await storage.getKeys("secrets")).toEqual([]);
    expect(await target.verify(made.key)).toBeNull();
    await target.importRecords(keys);
    expect((await target.verify(made.key))?.name).toBe("rotated"); // the old secret works until its grace ends
  });

  it("never takes a journal another process took over: the import fails and that process's journal stays", async () => {
    const from = createKeyStore();
    for (let i = 0; i < 3; i++) await from.create({ name: `key ${i}`, roles: ["GUEST"], permissions: [] });
    const keys = parseExport(text(exportLines(await from.exportRecords()))).keys;
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    const log = createMemoryAuditLog();
    const foreign = "import taken over by another process";
    // Once its events are written, another process takes the journal over (as it does after 60 s without a heartbeat).
    const audit = { ...log, append: async (event: AuditEvent) => (event.action === "import" && (await atomic.swap("meta:import", foreign)), log.append(event)) };
    const target = createKeyStore({ storage, atomic, audit });
    const refused = await refusal(target.importRecords(keys));
    expect(refused).toMatchObject({ code: "STORE_UNAVAILABLE", message: expect.stringMatching(/taken over by another process/) });
    expect(await storage.getItem("meta:import")).toBe(foreign);
    expect(await target.list()).toEqual([]); // rolled back here too: nothing of it is a key
  });

  it("runs one import at a time: a second one while the first runs is refused and changes nothing", async () => {
    let paused!: () => void;
    const pause = new Promise<void>((resume) => (paused = resume));
    let started!: () => void;
    const running = new Promise<void>((go) => (started = go));
    const { keys, store } = await watched(20, false, () => {}, async (event) => {
      if (event.action === "import") {
        started();
        await pause;
      }
    });
    const first = store.importRecords(keys.slice(0, 10));
    await running;
    const second = await refusal(store.importRecords(keys.slice(10)));
    expect(second.code).toBe("STORE_UNAVAILABLE");
    expect(second.message).toMatch(/another import into it is in progress \(process \d+ on .+\); nothing was imported/);
    paused();
    expect((await first).imported).toHaveLength(10);
    expect((await store.list()).map((key) => key.name).sort()).toEqual(keys.slice(0, 10).map((key) => key.record.name).sort());
    expect((await store.importRecords(keys.slice(10))).imported).toHaveLength(10); // once it is done
  });

  it("refuses a retiring secret that is another key's, another key's retiring one, or the key's own: one secret, one key", async () => {
    const store = createKeyStore();
    const alpha = await store.create({ name: "alpha", roles: ["VIEWER"], permissions: [] });
    const beta = await store.create({ name: "beta", roles: ["ADMIN"], permissions: [] });
    await store.rotate(beta.id, { graceMs: 3_600_000 });
    const gamma = await store.create({ name: "gamma", roles: ["VIEWER"], permissions: [] });
    await store.rotate(gamma.id, { graceMs: 3_600_000 });
    const lines = text(exportLines(await store.exportRecords())).trimEnd().split("\n");
    const at = (id: string) => lines.findIndex((line) => line.includes(id));
    const [a, b, g] = [at(alpha.id), at(beta.id), at(gamma.id)];
    const edit = (index: number, change: (value: Record<string, any>) => void) => {
      const copy = [...lines];
      const value = JSON.parse(copy[index]);
      change(value);
      copy[index] = JSON.stringify(value);
      return `${copy.join("\n")}\n`;
    };
    const main = (index: number) => JSON.parse(lines[index]).hash;
    const retiring = (index: number) => JSON.parse(lines[index]).retiring.hash;
    const later = Math.max(a, b), earlier = Math.min(a, b);
    const cases: [string, string, RegExp][] = [
      ["another key's secret", edit(b, (v) => (v.retiring.hash = main(a))), new RegExp(`^Line ${later + 1} of the import: the same secret \\(hash\\) as line ${earlier + 1}`)],
      ["another key's retiring secret", edit(g, (v) => (v.retiring.hash = retiring(b))), new RegExp(`^Line ${Math.max(b, g) + 1} of the import: the same secret \\(hash\\) as line ${Math.min(b, g) + 1}`)],
      ["a main secret that is another key's retiring one", edit(a, (v) => (v.hash = retiring(b))), new RegExp(`^Line ${later + 1} of the import: the same secret \\(hash\\) as line ${earlier + 1}`)],
      ["its own secret", edit(b, (v) => (v.retiring.hash = v.hash)), new RegExp(`^Line ${b + 1} of the import: the retiring secret \\(hash\\) is the key's own`)],
    ];
    for (const [what, file, message] of cases) {
      const refused = await refusalOf(() => parseExport(file));
      expect(refused.code, what).toBe("INVALID_INPUT");
      expect(refused.message, what).toMatch(message);
    }
  });

  it("refuses a malformed, tampered or newer file whole, naming the line", async () => {
    const { store } = await source();
    const lines = text(exportLines(await store.exportRecords())).trimEnd().split("\n");
    const edit = (at: number, change: (value: Record<string, unknown>) => void) => {
      const copy = [...lines];
      const value = JSON.parse(copy[at]);
      change(value);
      copy[at] = JSON.stringify(value);
      return `${copy.join("\n")}\n`;
    };
    const cases: [string, string, RegExp][] = [
      ["a hash that is not one", edit(2, (v) => (v.hash = "not a hash")), /^Line 3 of the import: the hash is not a SHA-256/],
      ["an unknown field", edit(1, (v) => (v.owner = "mallory")), /^Line 2 of the import: unknown field "owner"/],
      ["an unknown role", edit(3, (v) => (v.roles = ["ROOT"])), /^Line 4 of the import: unknown role "ROOT"/],
      ["a duplicate id", edit(2, (v) => (v.id = JSON.parse(lines[1]).id)), /^Line 3 of the import: the same id as line 2/],
      ["a newer format", edit(0, (v) => (v.version = 2)), /^Line 1 of the import: written in format version 2 by a newer service-api/],
      ["a truncated line", `${lines.join("\n").slice(0, -20)}\n`, /^Line 4 of the import: not a JSON object/],
      ["no header", `${lines.slice(1).join("\n")}\n`, /^Line 1 of the import: not an export/],
      ["a date that does not exist", edit(1, (v) => (v.createdAt = "2026-02-30T00:00:00.000Z")), /^Line 2 of the import: createdAt is not a time as the store writes it/],
      ["a grace period of years", edit(1, (v) => (v.graceUntil = "2099-01-01T00:00:00.000Z")), /^Line 2 of the import: graceUntil is more than 24 hours away/],
      ["an expiry past the bound", edit(1, (v) => (v.expiresAt = "9999-01-01T00:00:00.000Z")), /^Line 2 of the import: expiresAt is more than 3650 days away/],
      ["a key made in the future", edit(1, (v) => (v.createdAt = "2099-01-01T00:00:00.000Z")), /^Line 2 of the import: createdAt is in the future/],
      ["a secret in the description", edit(1, (v) => (v.description = `see ${generateSecret()}`)), /^Line 2 of the import: Description must not contain an API key secret/],
    ];
    for (const [what, file, message] of cases) {
      const refused = await refusalOf(() => parseExport(file));
      expect(refused.code, what).toBe("INVALID_INPUT");
      expect(refused.message, what).toMatch(message);
    }
  });
});
