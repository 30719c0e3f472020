// Several store instances over one fresh store, as separate processes or hosts would open it: for the
// suites that race operations through different instances.
import { join } from "node:path";
import { createStorage } from "unstorage";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { createKeyStore, createLocalAtomicIndex, type KeyStore } from "../../lib/store/key-store.ts";
import { tempDir } from "./cli.ts";

/** Where the instances' store lives, and where their clean-ups go (run them after the suite, in reverse). */
export interface InstancesOptions {
  count: number;
  /** A running redis-server's URL, for "redis". */
  redisUrl?: string;
  cleanups: (() => unknown)[];
}

/** `count` instances over one fresh store of `kind`: "memory" (one storage, one atomic index), "fs" or "redis". */
export async function storeInstances(kind: "memory" | "fs" | "redis", { count, redisUrl, cleanups }: InstancesOptions): Promise<KeyStore[]> {
  const each = Array.from({ length: count }, (_, i) => i);
  if (kind === "memory") {
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    return each.map(() => createKeyStore({ storage, atomic }));
  }
  if (kind === "fs") {
    const { dir, cleanup } = tempDir("service-api-instances-");
    const stores = each.map(() => {
      const driver = fsDriver({ base: join(dir, "keys") });
      return createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
    });
    cleanups.push(cleanup, () => Promise.all(stores.map((s) => s.close())));
    return stores;
  }
  if (!redisUrl) throw new Error("storeInstances(\"redis\") needs a redisUrl");
  const url = `${redisUrl}?prefix=instances${Math.random().toString(36).slice(2)}`;
  const stores = await Promise.all(
    each.map(async () => {
      const { storage, atomic, dispose } = await openRedisBackend(url);
      return createKeyStore({ storage, atomic, dispose });
    }),
  );
  cleanups.push(() => Promise.all(stores.map((s) => s.close())));
  return stores;
}
