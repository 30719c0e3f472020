/**
 * Redis URLs without their credentials, for every message and log line. Small and
 * free of ioredis, so describeStore can use it without loading the driver.
 *
 * A password may hold `@`, `/`, `:`, `%`, `?` or `#`, typed raw or percent-encoded; a URL parser then
 * misplaces the end of the credentials or fails. So everything between `//` and the last `@` is
 * treated as credentials (a host, port, db or `prefix` never holds `@`), and so are the values of
 * the `password` and `sentinelPassword` query parameters, which ioredis also reads.
 */

import { ServiceError } from "../../core/errors.ts";

const SECRET_PARAMS = /([?&](?:password|sentinelPassword|username)=)[^&#]*/gi;

/**
 * A Redis URL with any credentials replaced by `***`.
 * @example redactRedisUrl("redis://:p@ss/w0rd@db:6379/0") // "redis://***@db:6379/0"
 */
export function redactRedisUrl(url: string): string {
  const bare = url.replace(SECRET_PARAMS, "$1***"); // first: such a value may hold the last `@`
  const start = bare.indexOf("//");
  const at = bare.lastIndexOf("@");
  return start !== -1 && at > start ? `${bare.slice(0, start + 2)}***${bare.slice(at)}` : bare;
}

/** The pieces of a URL's credentials, raw and decoded, that could surface in a library's message. */
function secretPieces(url: string): string[] {
  const regions = [...url.matchAll(SECRET_PARAMS)].map((match) => match[0].slice(match[1].length));
  const bare = url.replace(SECRET_PARAMS, "$1");
  const start = bare.indexOf("//");
  const at = bare.lastIndexOf("@");
  if (start !== -1 && at > start) regions.push(bare.slice(start + 2, at));
  const pieces = new Set<string>();
  for (const region of regions) {
    for (const piece of [region, ...region.split(/[:/?#@&=]/)]) {
      pieces.add(piece);
      try {
        pieces.add(decodeURIComponent(piece));
      } catch { /* not percent-encoded */ }
    }
  }
  // Pieces of one or two characters would blank out ordinary words and reveal little on their own.
  return [...pieces].filter((p) => p.length >= 3).sort((a, b) => b.length - a.length);
}

/**
 * A function that removes a URL's credentials from any text: the URL itself, and any piece of the
 * credentials a library put into its own message (a host name ioredis took from a mistyped password).
 * @example const scrub = redisRedactor(url); scrub(error.message)
 */
export function redisRedactor(url: string): (text: string) => string {
  const pieces = secretPieces(url);
  const redacted = redactRedisUrl(url);
  return (text) => {
    let out = text.split(url).join(redacted);
    for (const piece of pieces) out = out.split(piece).join("***");
    return out;
  };
}

/** Prefix of every Redis key the store writes, unless the URL says `?prefix=<name>`. */
const DEFAULT_REDIS_PREFIX = "service-api";
/** The query parameters a store URL may carry; any other is refused rather than handed to ioredis as an option. */
const KNOWN_PARAMS = ["prefix", "username", "password"];
const SCHEMES = /^(rediss?)(\+sentinel|\+cluster)?:\/\//i;
const FORMS = "redis://[user:password@]host:port/db or redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/db]";

/** Where a store URL points: one Redis, or the master a group of sentinels names. */
export interface RedisTarget {
  mode: "single" | "sentinel";
  /** The Redis (single) or the sentinels (sentinel). */
  hosts: Array<{ host: string; port: number }>;
  /** The master's name (sentinel). */
  name?: string;
  db: number;
  tls: boolean;
  username?: string;
  password?: string;
  prefix: string;
}

const usage = (message: string) => new ServiceError("USAGE", message);

/** `host:port`, `[v6]:port` or `host` (port 6379, or 26379 for a sentinel). */
function hostOf(text: string, defaultPort: number): { host: string; port: number } {
  const found = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(text);
  const port = found?.[2] === undefined ? defaultPort : Number(found[2]);
  if (!found || port < 1 || port > 65_535) throw new TypeError("bad host");
  return { host: found[1].replace(/^\[|\]$/g, ""), port };
}

/**
 * Reads a store URL: `redis://`, `rediss://` (TLS), `redis+sentinel://` or `rediss+sentinel://`, with an
 * optional `?prefix=<name>`. USAGE naming the problem for anything else: a malformed URL, an unknown query
 * parameter, `redis+cluster://`.
 * @example parseRedisUrl("redis+sentinel://s1:26379,s2:26379/main/0").hosts.length // 2
 */
export function parseRedisUrl(url: string): RedisTarget {
  const scheme = SCHEMES.exec(url);
  if (scheme?.[2]?.toLowerCase() === "+cluster") {
    throw usage(`Redis Cluster (redis+cluster://) is not supported yet: use one Redis (redis://) or Sentinel (redis+sentinel://)`);
  }
  const sentinel = Boolean(scheme?.[2]);
  // The sentinels' list is no URL host: parse the rest with a stand-in host, then read the list.
  const rest = scheme ? url.slice(scheme[0].length) : "";
  const end = rest.search(/[/?#]/) === -1 ? rest.length : rest.search(/[/?#]/);
  const authority = rest.slice(0, end);
  const at = authority.lastIndexOf("@");
  const hostList = authority.slice(at + 1);
  let target: RedisTarget;
  try {
    if (!scheme) throw new TypeError("not a Redis URL");
    const parsed = new URL(`redis://${authority.slice(0, at + 1)}stand-in${rest.slice(end)}`);
    // An `@` past the host means a password with a raw / ? or #: the parser took part of it for the host.
    if (/@|%40/i.test(parsed.pathname + parsed.search + parsed.hash)) throw new TypeError("credentials not percent-encoded");
    const hosts = hostList.split(",").map((h) => hostOf(h, sentinel ? 26_379 : 6_379));
    const path = parsed.pathname.split("/").slice(1).filter((p, i, all) => p || i < all.length - 1);
    const [name, db] = sentinel ? [decodeURIComponent(path[0] ?? ""), path[1]] : [undefined, path[0]];
    if ((sentinel && (!name || path.length > 2)) || (!sentinel && (path.length > 1 || hosts.length > 1))) throw new TypeError("shape");
    if (db !== undefined && db !== "" && !/^\d{1,2}$/.test(db)) throw new TypeError("db");
    const param = (key: string) => parsed.searchParams.get(key) ?? undefined;
    target = {
      mode: sentinel ? "sentinel" : "single",
      hosts,
      name,
      db: Number(db || 0),
      tls: scheme[1].toLowerCase() === "rediss",
      // Decoding throws "URI malformed" on a raw `%`: a usage error here rather than deep in the Redis client.
      username: decodeURIComponent(parsed.username) || param("username"),
      password: decodeURIComponent(parsed.password) || param("password"),
      prefix: (param("prefix") ?? DEFAULT_REDIS_PREFIX).replace(/^:+|:+$/g, ""),
    };
    const unknown = [...parsed.searchParams.keys()].find((key) => !KNOWN_PARAMS.includes(key));
    if (unknown !== undefined) {
      throw usage(`Unknown Redis URL parameter '${unknown}' in '${redactRedisUrl(url)}': use prefix=<name>, username or password (TLS files and the sentinels' password come from SERVICE_API_REDIS_* variables)`);
    }
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    // No `cause`: Node's "Invalid URL" error carries the whole URL in `input`.
    throw usage(`Invalid Redis URL '${redactRedisUrl(url)}': use ${FORMS}, with @ / : % ? # in a password percent-encoded`);
  }
  // Characters unstorage keeps as they are, so its keys and the atomic ones match byte for byte.
  if (!/^[A-Za-z0-9_.:-]+$/.test(target.prefix)) {
    throw usage(`Invalid Redis key prefix '${target.prefix}': use letters, digits, '-', '_', '.' or ':'`);
  }
  return target;
}
