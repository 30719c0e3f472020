/**
 * Where a webhook may be sent. An endpoint's URL is `https:`, or `http:` to a loopback host (a receiver on
 * this machine). The address actually connected to decides the rest, checked after the DNS answer and
 * before the connection (`http/webhooks/send.ts` passes `checkAddress` as its `lookup`), so a name that
 * resolves, or later rebinds, to a private address is refused unless the endpoint allows private ones.
 */
import { ServiceError } from "./errors.ts";

/** Longest endpoint URL accepted. */
export const MAX_URL_LENGTH = 2_000;

/**
 * 4 or 6 for an IP address as DNS answers and WHATWG URLs write them (canonical), else 0. Not node:net's
 * `isIP`: the key store loads this module, and the CLI's start-up would pay for loading node:net.
 */
function isIP(address: string): 0 | 4 | 6 {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (v4) return v4.slice(1).every((part) => Number(part) <= 255) ? 4 : 0;
  return address.includes(":") && /^[0-9a-f:]+(:\d{1,3}(\.\d{1,3}){3})?$/i.test(address) ? 6 : 0;
}

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** IPv4 blocks no public receiver lives in: [first octets as a number, prefix length, name]. */
const V4_PRIVATE: readonly [string, number][] = [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4],
];

const v4Number = (address: string) => address.split(".").reduce((n, part) => n * 256 + Number(part), 0);

function v4Private(address: string): boolean {
  const n = v4Number(address);
  return V4_PRIVATE.some(([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(v4Number(base) / 2 ** (32 - bits)));
}

/** The IPv4 address an IPv4-mapped IPv6 address holds (`::ffff:10.0.0.1`, or as URLs write it, `::ffff:a00:1`). */
function mappedV4(address: string): string | undefined {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (dotted) return dotted;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const [high, low] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

/** True for a loopback address (127.0.0.0/8, ::1, and IPv4 loopback mapped into IPv6). */
export function isLoopbackAddress(address: string): boolean {
  const mapped = mappedV4(address);
  if (mapped) return isLoopbackAddress(mapped);
  if (isIP(address) === 4) return address.startsWith("127.");
  return isIP(address) === 6 && /^(0{0,4}:){2,7}0{0,3}1$|^::1$/.test(address.toLowerCase());
}

/** True for an address in a private, loopback, link-local, shared, reserved or multicast range. */
export function isPrivateAddress(address: string): boolean {
  const mapped = mappedV4(address);
  if (mapped) return isPrivateAddress(mapped);
  if (isIP(address) === 4) return v4Private(address);
  if (isIP(address) !== 6) return true; // not an address: never trusted
  const a = address.toLowerCase();
  if (a === "::" || isLoopbackAddress(a)) return true;
  const first = parseInt(a.split(":")[0] || "0", 16);
  // fc00::/7 unique local, fe80::/10 link-local, ff00::/8 multicast, 64:ff9b::/96 and 2002::/16 embed IPv4.
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xff00) === 0xff00 || first === 0x64 || first === 0x2002;
}

/** What the target allows, as the endpoint keeps it. */
export interface TargetRules {
  allowPrivate?: boolean;
}

/**
 * Checks an endpoint URL as written; returns it normalized (WHATWG). INVALID_INPUT, naming the fix, for
 * anything but `https:` or `http:` to a loopback host, for credentials in the URL, and for a private IP
 * literal without `allowPrivate`.
 */
export function checkEndpointUrl(raw: string, rules: TargetRules = {}): string {
  const text = raw.trim();
  let url: URL;
  try {
    if (text.length > MAX_URL_LENGTH) throw new Error("too long");
    url = new URL(text);
  } catch {
    throw new ServiceError("INVALID_INPUT", `Invalid webhook URL '${text.slice(0, 100)}': give an absolute https:// URL (at most ${MAX_URL_LENGTH} characters)`);
  }
  if (url.username || url.password) throw new ServiceError("INVALID_INPUT", "A webhook URL must not hold a user name or password: the payload is signed instead");
  const host = url.hostname.toLowerCase();
  if (url.protocol === "http:" && !LOOPBACK_NAMES.has(host) && !(isIP(host) && isLoopbackAddress(host))) {
    throw new ServiceError("INVALID_INPUT", `Webhook URL '${url.origin}' is http: only a loopback host (localhost, 127.0.0.1, [::1]) may be; use https://`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ServiceError("INVALID_INPUT", `Webhook URL scheme '${url.protocol}' is not supported: use https://`);
  }
  const literal = host.replace(/^\[|\]$/g, "");
  if (isIP(literal) && !rules.allowPrivate && isPrivateAddress(literal) && !isLoopbackAddress(literal)) {
    throw new ServiceError("INVALID_INPUT", `Webhook URL '${url.origin}' is a private address: add --allow-private to send there`);
  }
  return url.href;
}

/**
 * Whether a connection to `address` (what the DNS answered for the URL's host) may go ahead: a loopback
 * address only when the URL named a loopback host, another private one only with `allowPrivate`.
 * Returns the reason to refuse, or undefined.
 */
export function refuseAddress(url: string, address: string, rules: TargetRules = {}): string | undefined {
  const parsed = new URL(url);
  const host = parsed.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (parsed.protocol === "http:" && !isLoopbackAddress(address)) return `${host} resolved to ${address}: http: goes to loopback only`;
  if (isLoopbackAddress(address) && (LOOPBACK_NAMES.has(host) || isLoopbackAddress(host))) return undefined;
  if (rules.allowPrivate || !isPrivateAddress(address)) return undefined;
  return `${host} resolved to ${address}, a private address (the endpoint needs --allow-private)`;
}
