/**
 * Where a webhook may be sent. An endpoint's URL is `https:`, or `http:` to a loopback host (a receiver on
 * this machine). The address actually connected to decides the rest, checked after the DNS answer and
 * before the connection (`http/webhooks/send.ts` passes `checkAddress` as its `lookup`), so a name that
 * resolves, or later rebinds, to a private address is refused unless the endpoint allows private ones.
 */
import ipaddr from "ipaddr.js";
import { ServiceError } from "./errors.ts";

/** Longest endpoint URL accepted. */
const MAX_URL_LENGTH = 2_000;

/** The address `text` is (an IPv4-mapped IPv6 address as its IPv4 one), or undefined when it is not an IP address. */
function addressOf(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!ipaddr.IPv6.isValid(text) && !ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
  const parsed = ipaddr.parse(text);
  return parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
}

/** 4 or 6 for an IP address as DNS answers and WHATWG URLs write them, else 0. */
const isIP = (text: string): 0 | 4 | 6 => (addressOf(text)?.kind() === "ipv4" ? 4 : addressOf(text) ? 6 : 0);

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** True for a loopback address (127.0.0.0/8, ::1, and IPv4 loopback mapped into IPv6). */
function isLoopbackAddress(address: string): boolean {
  return addressOf(address)?.range() === "loopback";
}

/**
 * True for any address but a global unicast one (ipaddr.js's ranges: private, loopback, link-local, shared,
 * reserved, multicast, the IPv6 forms that embed IPv4, ...), and for the deprecated IPv4-compatible ::/96,
 * which ipaddr.js calls unicast. Not an address: never trusted.
 */
export function isPrivateAddress(address: string): boolean {
  const parsed = addressOf(address);
  if (!parsed) return true;
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)) return true;
  return parsed.range() !== "unicast";
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
