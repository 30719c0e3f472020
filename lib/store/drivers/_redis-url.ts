/**
 * Redis URLs without their credentials, for every message and log line. Small and
 * free of ioredis, so describeStore can use it without loading the driver.
 *
 * A password may hold `@`, `/`, `:`, `%`, `?` or `#`, typed raw or percent-encoded; a URL parser then
 * misplaces the end of the credentials or fails. So everything between `//` and the last `@` is
 * treated as credentials (a host, port, db or `prefix` never holds `@`), and so are the values of
 * the `password` and `sentinelPassword` query parameters, which ioredis also reads.
 */

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
