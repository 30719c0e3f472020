/**
 * Which client a request comes from, for counting its failed authentications (`auth-throttle.ts`) and for
 * keys' IP allow-lists (`authenticate.ts`): the
 * socket's address, or, only when that address is one of the trusted proxies (`trustProxy`,
 * `--trust-proxy`), the right-most address in `X-Forwarded-For` that is not a trusted proxy. Everything
 * left of that is written by the client and proves nothing. IPv6 clients are counted by their /64, the
 * block one subscriber gets, so rotating through the addresses of one block is one client.
 */
import { ServiceError } from "../core/errors.ts";

/** Hops of `X-Forwarded-For` looked at, from the right; a longer chain stops at the last trusted one. */
const MAX_HOPS = 32;
/** Longer than any IPv6 address with a zone, brackets and a port: not an address. */
const MAX_ENTRY = 64;

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function ipv4Bytes(text: string): number[] | null {
  const parts = V4.exec(text);
  if (!parts) return null;
  const bytes = parts.slice(1).map(Number);
  return bytes.every((b) => b <= 255) ? bytes : null;
}

/** The 16 bytes of an IPv6 address (with an IPv4 tail or `::`), or null. */
function ipv6Bytes(text: string): number[] | null {
  if (!/^[0-9a-f:.]+$/i.test(text)) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (half: string): number[] | null => {
    if (half === "") return [];
    const out: number[] = [];
    const parts = half.split(":");
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      const v4 = i === parts.length - 1 && part.includes(".") ? ipv4Bytes(part) : null;
      if (v4) out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      else if (/^[0-9a-f]{1,4}$/i.test(part)) out.push(parseInt(part, 16));
      else return null;
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...head, ...Array<number>(missing).fill(0), ...tail];
  return all.flatMap((g) => [g >> 8, g & 255]);
}

/**
 * An address as bytes: 4 for IPv4 (an IPv4-mapped IPv6 address too), 16 for IPv6, without a zone
 * (`%eth0`); brackets and a port (`[::1]:80`, `1.2.3.4:80`, as some proxies write them) are dropped.
 */
export function parseAddress(raw: string): number[] | null {
  let text = raw.trim();
  if (text.length === 0 || text.length > MAX_ENTRY) return null;
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text);
  if (bracketed) text = bracketed[1];
  else if (/^[\d.]+:\d{1,5}$/.test(text)) text = text.slice(0, text.indexOf(":"));
  text = text.replace(/%[\w.-]+$/, "");
  const v4 = ipv4Bytes(text);
  if (v4) return v4;
  const v6 = ipv6Bytes(text);
  if (!v6) return null;
  const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 255 && v6[11] === 255;
  return mapped ? v6.slice(12) : v6;
}

/** What a client is counted as: an IPv4 address, or an IPv6 address's /64 (`2001:db8:0:1::/64`). */
export function clientKey(bytes: readonly number[]): string {
  if (bytes.length === 4) return bytes.join(".");
  const groups = [0, 2, 4, 6].map((i) => ((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return [...groups, "", "/64"].join(":"); // one flat string: a template would keep its parts (the throttle holds 100,000)
}

/** A predicate over parsed addresses, from IPs and CIDR blocks of either family. */
export type AddressSet = (bytes: readonly number[]) => boolean;

/**
 * `--trust-proxy`'s list: IPv4 or IPv6 addresses and CIDR blocks (`10.0.0.0/8`, `fd00::/8`), comma-separated
 * or as a list. Throws a USAGE error naming the bad entry.
 * @example parseTrustedProxies("127.0.0.1, 10.0.0.0/8")([10, 1, 2, 3]) // true
 */
export function parseTrustedProxies(value: string | readonly string[]): AddressSet {
  const list = (typeof value === "string" ? value.split(",") : [...value]).map((s) => s.trim()).filter(Boolean);
  const blocks = list.map((entry) => {
    const [address, bits, extra] = entry.split("/");
    const bytes = parseAddress(address);
    const max = bytes ? bytes.length * 8 : 0;
    const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : -1;
    if (!bytes || extra !== undefined || address.includes("[") || prefix < 0 || prefix > max) {
      const shown = JSON.stringify([...entry].slice(0, 60).join(""));
      throw new ServiceError("USAGE", `Invalid --trust-proxy entry ${shown}: use IP addresses or CIDR blocks, comma-separated, like 127.0.0.1,10.0.0.0/8,fd00::/8`);
    }
    return { bytes, prefix };
  });
  return (candidate) =>
    blocks.some(({ bytes, prefix }) => {
      if (bytes.length !== candidate.length) return false;
      for (let bit = 0; bit < prefix; bit += 8) {
        const mask = prefix - bit >= 8 ? 255 : (255 << (8 - (prefix - bit))) & 255;
        if ((bytes[bit >> 3] & mask) !== (candidate[bit >> 3] & mask)) return false;
      }
      return true;
    });
}

/**
 * The client a request is counted as (see the module's comment); "unknown" when the adapter gives no
 * address (a fetch handler called without one: all such requests share one count).
 */
export function clientOf(remoteAddress: string | undefined, forwardedFor: string | null, trusted: AddressSet | null): string {
  const client = clientAddress(remoteAddress, forwardedFor, trusted);
  return client ? clientKey(client) : "unknown";
}

/**
 * The client's whole address as bytes (4 or 16), chosen as the module's comment says; null when the
 * adapter gives none. A key's allow-list is matched against it (`authenticate.ts`).
 */
export function clientAddress(remoteAddress: string | undefined, forwardedFor: string | null, trusted: AddressSet | null): number[] | null {
  const socket = remoteAddress === undefined ? null : parseAddress(remoteAddress);
  if (!socket) return null;
  if (!trusted || !forwardedFor || !trusted(socket)) return socket;
  // Right to left: each hop was written by the proxy to its right, trusted so far. A hop that is not
  // an address ends the walk at the last trusted one (the proxy that passed it on).
  let client = socket;
  let end = forwardedFor.length;
  for (let hop = 0; hop < MAX_HOPS && end > 0; hop++) {
    const start = forwardedFor.lastIndexOf(",", end - 1);
    const entry = end - start - 1 > MAX_ENTRY + 16 ? null : parseAddress(forwardedFor.slice(start + 1, end));
    if (!entry) break;
    client = entry;
    if (!trusted(entry)) break;
    end = start;
  }
  return client;
}
