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

/** Splits our own `prefix` query parameter off the URL; ioredis reads the remaining ones. */
export function splitPrefix(url: string): { url: string; prefix: string } {
  const parsed = new URL(url);
  // An `@` past the host means a password with a raw / ? or #: the parser took part of it for the host,
  // and ioredis would look that up in DNS. Refuse rather than send pieces of a password around.
  if (/@|%40/i.test(parsed.pathname + parsed.search + parsed.hash)) throw new TypeError("credentials not percent-encoded");
  // ioredis decodes these and throws "URI malformed" on a raw `%`: fail here, where it reads as a usage error.
  decodeURIComponent(parsed.username);
  decodeURIComponent(parsed.password);
  const prefix = (parsed.searchParams.get("prefix") ?? DEFAULT_REDIS_PREFIX).replace(/^:+|:+$/g, "");
  // Characters unstorage keeps as they are, so its keys and the atomic ones match byte for byte.
  if (!/^[A-Za-z0-9_.:-]+$/.test(prefix)) {
    throw new ServiceError("USAGE", `Invalid Redis key prefix '${prefix}': use letters, digits, '-', '_', '.' or ':'`);
  }
  parsed.searchParams.delete("prefix");
  return { url: parsed.toString(), prefix };
}
