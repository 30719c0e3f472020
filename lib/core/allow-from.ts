/**
 * A key's IP allow-list: the addresses a request with the key may come from, as CIDR blocks of either
 * family (`10.0.0.0/8`, `2001:db8::/32`) or single addresses (`192.0.2.7`, stored as `/32`; `::1`, as
 * `/128`). Absent or empty: any address. It is a second factor beside the secret, never instead of it.
 *
 * Stored form: each entry `<network address>/<prefix>`, the address as ipaddr.js prints it (IPv6 in RFC 5952
 * form), host bits cleared, duplicates dropped, at most ALLOW_FROM_MAX. An IPv4-mapped IPv6 entry
 * (`::ffff:192.0.2.0/120`) is stored as its IPv4 block, and an IPv4-mapped client address (what a dual-stack
 * socket reports for an IPv4 client) is matched as its IPv4 form, so one IPv4 entry covers both spellings.
 * IPv4 clients are matched by IPv4 entries only: `::/0` is every IPv6 address, `0.0.0.0/0` every IPv4 one.
 * Address parsing is ipaddr.js's; IPv4 must be four decimal parts (`127.1` and `0x7f.0.0.1` are refused).
 */
import * as v from "valibot";
import ipaddr from "ipaddr.js";
import { ServiceError } from "./errors.ts";
import { redactSecrets } from "./secret.ts";

/** Entries one key may have: enough for a few sites, few enough to check on every request. */
export const ALLOW_FROM_MAX = 32;
const ALLOW_FROM_FORM = "IP addresses or CIDR blocks, comma-separated, like 192.0.2.7,10.0.0.0/8,2001:db8::/32 (or any)";

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Block = [Address, number];

const shown = (text: string) => JSON.stringify(redactSecrets(text.length > 60 ? `${text.slice(0, 60)}…` : text));

/** One address as typed: IPv4 in four decimal parts or IPv6 without a zone; IPv4-mapped IPv6 as IPv4. */
function parseAddress(text: string): Address | null {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (text.includes("%") || !ipaddr.IPv6.isValid(text)) return null;
  return ipaddr.IPv6.parse(text);
}

/** One entry as a block (network address, prefix), or a message saying what is wrong with it. */
function parseEntry(entry: string): Block | string {
  const [text, bits, extra] = entry.split("/");
  const address = extra === undefined ? parseAddress(text) : null;
  if (!address) return `${shown(entry)} is not an IP address or CIDR block`;
  const max = address.kind() === "ipv4" ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : -1;
  if (prefix < 0 || prefix > max) return `${shown(entry)} has a prefix length outside 0 to ${max}`;
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    return network([(address as ipaddr.IPv6).toIPv4Address(), prefix - 96]);
  }
  return network([address, prefix]);
}

/** The block with its host bits cleared. */
function network([address, prefix]: Block): Block {
  const bytes = address.toByteArray();
  for (let bit = prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3] &= ~(0x80 >> (bit & 7));
  return [ipaddr.fromByteArray(bytes), prefix];
}

const stored = ([address, prefix]: Block) => `${address.toString()}/${prefix}`;

/**
 * An allow-list in stored form, from a list (GraphQL, the library, an import) or a comma-separated string
 * (`--allow-from`, where `any` alone means none: `[]`). Throws INVALID_INPUT naming the bad entry.
 * @example checkAllowFrom("192.0.2.7, 10.1.0.0/16, ::ffff:198.51.100.0/120") // ["192.0.2.7/32", "10.1.0.0/16", "198.51.100.0/24"]
 */
export function checkAllowFrom(value: unknown): string[] {
  if (typeof value === "string" && value.trim().toLowerCase() === "any") return [];
  const list = typeof value === "string" ? value.split(",") : Array.isArray(value) ? value : null;
  if (!list || !list.every((entry) => typeof entry === "string")) throw invalid(`An allow-list is ${ALLOW_FROM_FORM}`);
  const out = new Set<string>();
  for (const entry of list.map((s: string) => s.trim()).filter(Boolean)) {
    const block = parseEntry(entry);
    if (typeof block === "string") throw invalid(`Invalid allow-list entry: ${block}; use ${ALLOW_FROM_FORM}`);
    out.add(stored(block));
  }
  if (typeof value === "string" && out.size === 0) throw invalid(`An allow-list needs ${ALLOW_FROM_FORM}`);
  if (out.size > ALLOW_FROM_MAX) throw invalid(`A key's allow-list has at most ${ALLOW_FROM_MAX} entries (this one has ${out.size})`);
  return [...out];
}

const invalid = (message: string) => new ServiceError("INVALID_INPUT", message);

/** The same checks as a valibot schema (a list or a comma-separated string), for forms and GraphQL inputs. */
export const AllowFromSchema: v.GenericSchema<string | string[], string[]> = v.pipe(
  v.union([v.string(), v.array(v.string())], `An allow-list is ${ALLOW_FROM_FORM}`),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    try {
      return checkAllowFrom(dataset.value);
    } catch (error) {
      addIssue({ message: (error as Error).message });
      return NEVER;
    }
  }),
);

/** Parsed blocks per stored list (a verified key's list is one array while the key is remembered). */
const parsed = new WeakMap<readonly string[], Block[] | null>();

function blocksOf(list: readonly string[]): Block[] | null {
  let blocks = parsed.get(list);
  if (blocks === undefined) {
    const all = list.map(parseEntry);
    // An entry that does not parse (a record edited by hand) admits nobody: the list fails closed.
    blocks = all.every((block) => typeof block !== "string") ? (all as Block[]) : null;
    parsed.set(list, blocks);
  }
  return blocks;
}

/** A client address (text or its 4 or 16 bytes) as matched: an IPv4-mapped one as IPv4; null if not one. */
function clientAddress(address: string | readonly number[]): Address | null {
  let parsed: Address;
  try {
    parsed = typeof address === "string" ? ipaddr.parse(address.trim()) : ipaddr.fromByteArray([...address]);
  } catch {
    return null;
  }
  if (parsed.kind() === "ipv4" && typeof address === "string" && !ipaddr.IPv4.isValidFourPartDecimal(address.trim())) return null;
  return parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
}

/**
 * Whether a request from `address` may use a key with allow-list `list`: true when the list is absent or
 * empty, or an entry holds the address. An address that is not one (unknown, garbled) is outside every list.
 * @example allowedFrom(["10.0.0.0/8"], "::ffff:10.1.2.3") // true
 */
export function allowedFrom(list: readonly string[] | undefined, address: string | readonly number[] | undefined): boolean {
  if (!list || list.length === 0) return true;
  const client = address === undefined ? null : clientAddress(address);
  const blocks = blocksOf(list);
  if (!client || !blocks) return false;
  return blocks.some(([network, prefix]) => network.kind() === client.kind() && client.match(network, prefix));
}

/** `10.0.0.0/8,192.0.2.7/32`, for a list's column and messages; "" for none. */
export const formatAllowFrom = (list: readonly string[] | undefined): string => (list ?? []).join(",");

/** An address's 4 or 16 bytes as text (`192.0.2.7`, `2001:db8::1`), for messages. */
export const formatAddress = (bytes: readonly number[]): string => ipaddr.fromByteArray([...bytes]).toString();
