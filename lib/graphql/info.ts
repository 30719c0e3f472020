/**
 * The host facts behind `Query.info` (their types in the SDL, `INFO_SDL`), one resolver per field, so
 * a request computes only the facts it selects: `{ info { hostname } }` must not enumerate the CPUs.
 * Facts fixed for the life of the process are read once, on first ask; the hostname, uptime and memory
 * are read live.
 */
import os from "node:os";
import process from "node:process";
import { VERSION } from "../core/version.ts";

/** The host facts' types in the SDL (`Query.info` returns an `Info`). */
export const INFO_SDL = /* GraphQL */ `
type InfoMemory {
  "Bytes."
  total: Float!
  "Bytes."
  free: Float!
}

type Info {
  hostname: String!
  platform: String!
  release: String!
  "Seconds since the host booted."
  uptime: Float!
  cpus: Int!
  memory: InfoMemory!
  "Runtime and its version, e.g. node 20.19.0 or deno 2.1.0."
  runtime: String!
  "The service's version."
  version: String!
}

`;

/** A function that reads its value the first time it is called and returns that value ever after. */
function once<T>(read: () => T): () => T {
  let cached: { value: T } | undefined;
  return () => (cached ??= { value: read() }).value;
}

const runtime = once(() => {
  const versions = process.versions as Record<string, string | undefined>;
  return versions.deno ? `deno ${versions.deno}` : `node ${versions.node}`;
});

/** The resolver of each field of the `Info` type (the names match the SDL). */
export const INFO_FIELDS: Readonly<Record<string, () => unknown>> = {
  // The hostname can be changed while the service runs, so it is read each time.
  hostname: () => os.hostname(),
  platform: once(() => os.platform()),
  release: once(() => os.release()),
  uptime: () => os.uptime(),
  cpus: once(() => os.cpus().length),
  memory: () => ({ total: os.totalmem(), free: os.freemem() }),
  runtime,
  version: () => VERSION,
};
