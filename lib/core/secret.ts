/**
 * API key secrets: `sapi_` + 43 base62 characters (256 bits from Web Crypto's `getRandomValues`) + a
 * 6-character base62 CRC-32 of those characters. The prefix lets secret scanners find leaked keys;
 * the checksum lets a server reject a mistyped or forged key without touching the store.
 * Only the SHA-256 of a secret is ever stored.
 */
import * as nodeCrypto from "node:crypto";

export const SECRET_PREFIX = "sapi_";
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BODY_LENGTH = 43; // 43 * log2(62) = 256.1 bits
const CHECK_LENGTH = 6; // 62^6 > 2^32
const SHAPE = new RegExp(`^${SECRET_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECK_LENGTH}}$`);

// A plain loop: Uint32Array.from over an array-like with a callback took three times as long at start-up.
const CRC_TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c;
}

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function base62(value: number, width: number): string {
  let out = "";
  for (let i = 0; i < width; i++, value = Math.floor(value / 62)) out = ALPHABET[value % 62] + out;
  return out;
}

/** Uniform random base62 characters (rejection sampling: bytes >= 248 are redrawn to avoid bias). */
function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

/**
 * Makes a new secret.
 * @example generateSecret() // "sapi_3kTq...h2Z9aB"
 */
export function generateSecret(): string {
  const body = randomBase62(BODY_LENGTH);
  return SECRET_PREFIX + body + base62(crc32(body), CHECK_LENGTH);
}

/**
 * Replaces anything shaped like a secret with its prefix and an ellipsis, so a key pasted into the
 * wrong flag or field is never echoed back in a message.
 * @example redactSecrets("Unknown option `--sapi_3kTq…`") // "Unknown option `--sapi_…`"
 */
export function redactSecrets(text: string): string {
  return text.replace(/(sapi_)[0-9a-z]+/gi, "$1…");
}

/** How many characters of a secret's alphabet in a row a path may hold before `redactSecretsInPath` cuts them. */
const PATH_RUN = 16;
const PATH_RUN_PATTERN = new RegExp(`(?:[0-9A-Za-z]|%[0-9A-Fa-f]{2}){${PATH_RUN},}`, "g");

/**
 * A request path with every run of PATH_RUN or more characters of a secret's alphabet (any of them maybe
 * percent-encoded) written "…": a secret's body (49 characters) or a part of one long enough to matter,
 * however the path spells it (`/sapi_…`, `/sapi%5F…`, the body alone). Paths the service answers hold no
 * such run; a long path of percent-encoded text is shortened too. Short paths are returned as they are.
 * @example redactSecretsInPath("/graphql/sapi_" + "x".repeat(49)) // "/graphql/sapi_…"
 */
export function redactSecretsInPath(path: string): string {
  return path.length < PATH_RUN ? path : path.replace(PATH_RUN_PATTERN, "…");
}

/** True when `secret` has the prefix, the length and a matching checksum: cheap, no store access. */
export function isWellFormedSecret(secret: string): boolean {
  if (typeof secret !== "string" || !SHAPE.test(secret)) return false;
  const body = secret.slice(SECRET_PREFIX.length, SECRET_PREFIX.length + BODY_LENGTH);
  return secret.endsWith(base62(crc32(body), CHECK_LENGTH));
}

/**
 * True when a secret's body and checksum appear anywhere in `text`: with or without the `sapi_`
 * prefix, even glued to other letters. The checksum makes this exact (a chance match is about 1 in
 * 62^6 per position), so prose that merely mentions `sapi_` does not match.
 * @example containsSecret(`token ${generateSecret()} for CI`) // true
 */
export function containsSecret(text: string): boolean {
  const width = BODY_LENGTH + CHECK_LENGTH;
  for (const [run] of text.matchAll(new RegExp(`[0-9A-Za-z]{${width},}`, "g"))) {
    for (let at = 0; at + width <= run.length; at++) {
      const body = run.slice(at, at + BODY_LENGTH);
      if (run.startsWith(base62(crc32(body), CHECK_LENGTH), at + BODY_LENGTH)) return true;
    }
  }
  return false;
}

/**
 * SHA-256 of a string (as UTF-8), as lowercase hex: the one hash of the store (secrets, names), from
 * node:crypto on Node and Deno alike. Synchronous, which Web Crypto's `subtle.digest` is not: the store
 * derives keys from names inside synchronous code. `crypto.hash` (Node 20.12+, Deno) is the one-shot
 * form, faster per call than `createHash` for the short strings hashed here.
 * @example sha256Hex("abc") // "ba7816bf…"
 */
export const sha256Hex: (text: string) => string = typeof nodeCrypto.hash === "function"
  ? (text) => nodeCrypto.hash("sha256", text, "hex")
  : (text) => nodeCrypto.createHash("sha256").update(text).digest("hex");
