/** The host facts behind `Query.info`. */
import os from "node:os";
import process from "node:process";
import { VERSION } from "../core/version.ts";

/** The answer to `Query.info`: this host and this service. */
export function hostInfo() {
  const versions = process.versions as Record<string, string | undefined>;
  return {
    hostname: os.hostname(),
    platform: os.platform(),
    release: os.release(),
    uptime: os.uptime(),
    cpus: os.cpus().length,
    memory: { total: os.totalmem(), free: os.freemem() },
    runtime: versions.deno ? `deno ${versions.deno}` : `node ${versions.node}`,
    version: VERSION,
  };
}
