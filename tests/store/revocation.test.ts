// Revocation where the file system makes it hard: one-second timestamps (ext4 with 128-byte inodes, where
// a freed inode number comes back at once) and a full disk. Both need root for the mounts; CI runs as root.
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import type { KeyStore } from "../../lib/store/key-store.ts";
import { runCli, tempDir } from "../helpers/cli.ts";

/** Needs root; CI runs as root, so there (CI set) it never skips: it runs, and fails if not root. */
const lacksRoot = process.getuid?.() !== 0 && !process.env.CI;
const NOT_ROOT = "needs root for loop and tmpfs mounts (CI runs as root)";

const sh = (cmd: string, ...args: string[]) => execFileSync(cmd, args, { stdio: "pipe" }).toString();
const mounts: string[] = [];
const { dir: root, cleanup } = tempDir("service-api-revocation-");

/** Mounts a fresh file system at a new directory under `root` and returns the directory. */
function mount(kind: "ext4-128" | "tmpfs", name: string): string {
  const at = join(root, name);
  mkdirSync(at);
  if (kind === "tmpfs") {
    sh("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", at);
  } else {
    const image = join(root, `${name}.img`);
    sh("truncate", "-s", "8M", image);
    sh("mkfs.ext4", "-q", "-F", "-I", "128", image); // 128-byte inodes: timestamps in whole seconds
    sh("mount", "-o", "loop", image, at);
  }
  mounts.push(at);
  return at;
}

/** Fills the file system holding `dir` until a write fails with ENOSPC. */
function fill(dir: string): void {
  const chunk = Buffer.alloc(64 * 1024, 1);
  for (let i = 0; ; i++) {
    try {
      writeFileSync(join(dir, `filler-${i}`), chunk);
    } catch (error) {
      if ((error as { code?: string }).code === "ENOSPC") break;
      throw error;
    }
  }
  // Small writes too, until not even one byte fits.
  for (let i = 0; ; i++) {
    try {
      writeFileSync(join(dir, `crumb-${i}`), "x".repeat(512));
    } catch (error) {
      if ((error as { code?: string }).code === "ENOSPC") break;
      throw error;
    }
  }
}

/** Every file under `dir` whose name ends in .tmp. */
function temporaries(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".tmp"));
}

/**
 * Pads the audit log with blank lines (which readers skip) to a multiple of 4 KiB, so that its last block is
 * full: on a full disk the next event then needs a new block, the case the log's reserve is for.
 */
function fillLastBlock(store: string): void {
  const log = join(store, "audit", "audit.log");
  const size = statSync(log).size;
  appendFileSync(log, "\n".repeat((4096 - (size % 4096)) % 4096));
}

/** How many delete events the audit trail holds for key `id`. */
const deleteEvents = async (store: KeyStore, id: string) =>
  (await store.audit()).filter((e) => e.action === "delete" && e.id === id).length;

const created = async (store: string, name: string) => {
  const run = await runCli(["apikey", "--create", "--name", name, "--roles", "GUEST", "--json", "--store", store]);
  expect(run.stderr).toBe("");
  return JSON.parse(run.stdout) as { id: string; key: string };
};
const deleted = async (store: string, name: string) => {
  const run = await runCli(["apikey", "--delete", "--name", name, "--store", store]);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
};

afterAll(() => {
  for (const at of mounts.reverse()) {
    try {
      sh("umount", at);
    } catch {
      sh("umount", "-l", at);
    }
  }
  cleanup();
});

describe.skipIf(lacksRoot)(`revocation on a file system with one-second timestamps (ext4 -I 128) [${NOT_ROOT}]`, () => {
  let store: string;
  let server: KeyStore;
  beforeAll(async () => {
    store = join(mount("ext4-128", "coarse"), "keys");
    // The service's own way of opening the store: a long-lived instance that remembers verifications.
    server = await openKeyStore(parseStoreSpec(store));
  });
  afterAll(() => server?.close());

  it("a key deleted by the CLI in the same second as the previous revocation is refused at once by a warm server", async () => {
    for (let round = 0; round < 6; round++) {
      const first = await created(store, `first ${round}`);
      const second = await created(store, `second ${round}`);
      expect((await server.verify(first.key))?.id).toBe(first.id);
      await deleted(store, `first ${round}`);
      expect(await server.verify(first.key)).toBeNull();
      expect((await server.verify(second.key))?.id).toBe(second.id); // remembered, tagged with this revision
      const started = Date.now();
      await deleted(store, `second ${round}`); // well within the same second, most rounds
      expect(await server.verify(second.key), `round ${round}, delete took ${Date.now() - started} ms`).toBeNull();
    }
  });
});

describe.skipIf(lacksRoot)(`revocation on a full disk [${NOT_ROOT}]`, () => {
  for (const kind of ["tmpfs", "ext4-128"] as const) {
    it(`${kind}: --delete works on a full disk, revokes the key and leaves no temporary file`, async () => {
      const disk = mount(kind, `full-${kind}`);
      const store = join(disk, "keys");
      const server = await openKeyStore(parseStoreSpec(store));
      try {
        const doomed = await created(store, "leaked");
        const kept = await created(store, "kept");
        const twins = await Promise.all([0, 1, 2, 3].map((i) => created(store, `twin ${i}`)));
        expect((await server.verify(doomed.key))?.id).toBe(doomed.id);
        expect(statSync(join(store, "audit", "reserve")).size).toBe(64 * 1024); // made with the first event
        fillLastBlock(store); // so that the next event needs a new block
        fill(disk);
        await deleted(store, "leaked");
        // The delete's event went first (write-ahead), into the room the audit log keeps in reserve.
        expect(await deleteEvents(server, doomed.id)).toBeGreaterThan(0);
        expect(existsSync(join(store, "audit", "reserve"))).toBe(false);
        // Concurrent deletes of the same keys on the full disk (by name and by id): each key is deleted once.
        const other = await openKeyStore(parseStoreSpec(store));
        const results = await Promise.all(twins.flatMap((twin, i) => [
          server.deleteByName(`twin ${i}`),
          other.deleteByName(`twin ${i}`),
          other.deleteById(twin.id),
        ]));
        await other.close();
        expect(results.filter(Boolean).map((k) => k!.id).sort()).toEqual(twins.map((t) => t.id).sort());
        for (const twin of twins) expect(await server.verify(twin.key)).toBeNull();
        for (const twin of twins) expect(await deleteEvents(server, twin.id)).toBeGreaterThan(0);
        fill(disk);
        expect(await server.verify(doomed.key)).toBeNull();
        expect((await server.verify(kept.key))?.id).toBe(kept.id);
        expect(temporaries(store)).toEqual([]);

        // A create cannot work on a full disk: it fails cleanly, commits nothing and leaves nothing behind.
        const refill = () => fill(disk); // the delete freed a little space
        refill();
        const run = await runCli(["apikey", "--create", "--name", "no room", "--roles", "GUEST", "--store", store]);
        expect(run.code).toBe(3);
        expect(run.stdout).toBe("");
        expect(run.stderr.trim().split("\n")).toHaveLength(1);
        expect(run.stderr).toMatch(/no space left/i);
        expect(temporaries(store)).toEqual([]);
        // Nor can an overwrite: the key it would replace keeps working, and nothing half-made is left.
        const overwrite = await runCli(["apikey", "--create", "--name", "kept", "--roles", "GUEST", "--overwrite", "--store", store]);
        expect(overwrite.code).toBe(3);
        expect(overwrite.stderr).toMatch(/no space left/i);
        expect((await server.verify(kept.key))?.id).toBe(kept.id);
        expect(temporaries(store)).toEqual([]);
        expect(readdirSync(join(store, "keys"))).toEqual([kept.id]);
        expect((await server.list()).map((k) => k.name)).toEqual(["kept"]);
        // Neither failed change left an event: both failed writing the new key, before their event.
        expect((await server.audit()).filter((e) => e.name === "no room" || (e.name === "kept" && e.action !== "create"))).toEqual([]);
        // The service's delete (by id, as GraphQL does it) works on the full disk as well.
        refill();
        expect((await server.deleteById(kept.id))?.id).toBe(kept.id);
        expect(await server.verify(kept.key)).toBeNull();
        expect(await deleteEvents(server, kept.id)).toBe(1);
        // Every event whole, the trail still readable by the CLI's store.
        expect((await server.audit()).every((e) => e.actor.kind === "local")).toBe(true);
        expect(temporaries(store)).toEqual([]);
      } finally {
        await server.close();
      }
    });
  }

  it("tmpfs: a store without a revision file yet (made by an older version) still deletes on a full disk", async () => {
    const disk = mount("tmpfs", "full-legacy");
    const store = join(disk, "keys");
    const server = await openKeyStore(parseStoreSpec(store));
    try {
      const doomed = await created(store, "leaked");
      rmSync(join(store, "meta", "revision"), { force: true }); // as a store where nothing was ever revoked
      expect((await server.verify(doomed.key))?.id).toBe(doomed.id);
      fillLastBlock(store);
      fill(disk);
      await deleted(store, "leaked");
      expect(await server.verify(doomed.key)).toBeNull();
      expect(await deleteEvents(server, doomed.id)).toBe(1);
      expect(temporaries(store)).toEqual([]);
    } finally {
      await server.close();
      rmSync(join(disk, "filler-0"), { force: true });
    }
  });
});

describe("revocation when the revision file is replaced rather than rewritten", () => {
  it("a server keeps seeing revocations after another program renames a new revision file into place", async () => {
    const { dir, cleanup: done } = tempDir("service-api-revision-");
    const store = join(dir, "keys");
    const server = await openKeyStore(parseStoreSpec(store));
    try {
      const first = await created(store, "first");
      const second = await created(store, "second");
      expect((await server.verify(first.key))?.id).toBe(first.id);
      // What an older version of the CLI does on every bump, and what restoring a copy of the store does.
      writeFileSync(join(store, "meta", "revision.new"), crypto.randomUUID());
      renameSync(join(store, "meta", "revision.new"), join(store, "meta", "revision"));
      expect((await server.verify(second.key))?.id).toBe(second.id);
      await deleted(store, "second");
      expect(await server.verify(second.key)).toBeNull();
      rmSync(store, { recursive: true }); // the whole store removed and made again
      const third = await created(store, "third");
      expect(await server.verify(first.key)).toBeNull();
      expect((await server.verify(third.key))?.id).toBe(third.id);
      await deleted(store, "third");
      expect(await server.verify(third.key)).toBeNull();
    } finally {
      await server.close();
      done();
    }
  });

  for (const [how, restore] of [
    ["moved aside and copied back (mv, cp -a)", (store: string) => (renameSync(store, `${store}.old`), sh("cp", "-a", `${store}.old`, store))],
    ["backed up with hard links (cp -al) and restored from them", (store: string) => (sh("cp", "-al", store, `${store}.bak`), rmSync(store, { recursive: true }), sh("cp", "-a", `${store}.bak`, store))],
  ] as const) {
    it(`a warm server notices a store ${how}: a key deleted afterwards is refused at once`, async () => {
      const { dir, cleanup: done } = tempDir("service-api-revision-");
      const store = join(dir, "keys");
      const server = await openKeyStore(parseStoreSpec(store));
      try {
        const key = await created(store, "restored");
        expect((await server.verify(key.key))?.id).toBe(key.id); // warm: the revision file is held open
        restore(store); // the old revision file lives on elsewhere (nlink > 0), and no longer changes
        await deleted(store, "restored");
        expect(await server.verify(key.key)).toBeNull();
      } finally {
        await server.close();
        done();
      }
    });
  }
});
