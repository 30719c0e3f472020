/**
 * What the Redis backend runs on, read from INFO: the Redis in use, its replicas and its persistence; and
 * the one place a change waits for a replica (`WAIT`), so a revocation survives a failover.
 */
import type { Redis } from "ioredis";
import { ServiceError } from "../../core/errors.ts";
import type { StoreTopology } from "../types.ts";
import type { RedisTarget } from "./_redis-url.ts";

/** Longest a change waits for a replica to confirm it, by default. */
export const REPLICA_WAIT_MS = 2_000;

const field = (info: string, name: string) => new RegExp(`^${name}:(.*)$`, "m").exec(info)?.[1]?.trim();
const refused = (error: unknown) => /NOPERM|unknown command|disabled/i.test(error instanceof Error ? error.message : String(error));

const NO_AOF_WARNING =
  "AOF is off: a key deleted, disabled or rotated after the last RDB snapshot comes back when Redis restarts. " +
  "Turn it on (appendonly yes); see docs/operations.md#redis-persistence";

/** INFO, or null when this user may not run it (any other failure rejects). */
async function infoOf(client: Redis, section?: string): Promise<string | null> {
  try {
    return await (section ? client.info(section) : client.info());
  } catch (error) {
    if (refused(error)) return null;
    throw error;
  }
}

/** The `host:port` the client is connected to now ("" while it is not). */
function addressOf(client: Redis): string {
  const stream = client.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  if (!stream?.remoteAddress) return "";
  return `${stream.remoteAddress.includes(":") ? `[${stream.remoteAddress}]` : stream.remoteAddress}:${stream.remotePort}`;
}

/** The topology of the connection's Redis; rejects when Redis does not answer. */
export async function readTopology(client: Redis, target: RedisTarget): Promise<StoreTopology> {
  const info = await infoOf(client);
  const address = addressOf(client);
  const master = target.mode === "sentinel" ? `${target.name} at ${address}` : address;
  if (info === null) {
    const warning = "INFO is not permitted for this Redis user: its replicas and persistence are unknown, and changes are not confirmed by a replica (see docs/operations.md#a-redis-user-with-least-privilege)";
    return { mode: target.mode, master, replicas: null, aof: null, warnings: [warning] };
  }
  const aof = field(info, "aof_enabled") === "1";
  const warnings = aof ? [] : [NO_AOF_WARNING];
  if (field(info, "role") === "slave") warnings.push("this Redis is a replica: every change fails (READONLY); point the store at the master");
  return { mode: target.mode, master, replicas: Number(field(info, "connected_slaves") ?? 0), aof, warnings };
}

/** The message of a cluster node reached by a plain URL, or null when the server is no cluster node. */
export function clusterRefusal(info: string): string | null {
  return field(info, "cluster_enabled") === "1"
    ? "this Redis is a Redis Cluster node; a plain redis:// URL would reach one shard only. A cluster store is redis+cluster://, which is not supported yet: use one Redis or Sentinel"
    : null;
}

/**
 * The wait after a change: when the master has replicas, `WAIT 1 <timeoutMs>`; none confirming in time is
 * NOT_REPLICATED (exit 3), saying the change is on the master only. No replicas, or INFO refused: nothing to
 * wait for. `remember` (Sentinel): a master once seen with replicas is waited for even when it has none left,
 * since that is a master whose replica was just promoted away, and a change it takes now is lost when the
 * sentinels make it a replica.
 */
export function replicaConfirmation(client: Redis, timeoutMs: number, failure: (error: unknown) => never, remember: boolean): () => Promise<void> {
  const withReplicas = new Set<string>();
  /** Whether the master has replicas now, remembered for its address. */
  const note = (info: string) => {
    const some = Number(field(info, "connected_slaves") ?? 0) > 0;
    if (some) withReplicas.add(addressOf(client));
    return some;
  };
  if (remember) {
    // Each connection looks at once, so a master's replicas are known before its first change.
    const look = () => void infoOf(client, "replication").then((info) => info && note(info), () => {});
    look();
    client.on("ready", look);
  }
  return async () => {
    const info = await infoOf(client, "replication").catch(failure);
    if (!info) return;
    if (!note(info) && (!remember || !withReplicas.has(addressOf(client)))) return;
    const confirmed = await client.wait(1, timeoutMs).catch(failure);
    if (confirmed >= 1) return;
    throw new ServiceError(
      "NOT_REPLICATED",
      `The change was made on the Redis master, but no replica confirmed it within ${timeoutMs} ms: a failover now could undo it. ` +
        "Check the replicas (see docs/operations.md#changes-and-replicas), then check the key and repeat the change if needed",
    );
  };
}
