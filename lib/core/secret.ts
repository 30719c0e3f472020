/**
 * API key secrets: `sapi_` + 43 base62 characters (256 bits from Web Crypto's `getRandomValues`) + a
 * 6-character base62 CRC-32 of those characters. The prefix lets secret scanners find leaked keys;
 * the checksum lets a server reject a mistyped or forged key without touching the store.
 * Only the SHA-256 of a secret is ever stored.
 */
import * as nodeCrypto from "node:crypto";
import { once } from "./_once.ts";

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
 * The one rule for every message the CLI prints and the service answers: anything that passes a
 * secret's checksum (`secretSpans`), with or without its prefix, and `sapi_` followed by six or more of its
 * characters, is elided to "…", so a key pasted into the wrong flag, field or variable is never echoed back.
 * @example redactSecrets("Unknown option `--sapi_3kTq9x`") // "Unknown option `--sapi_…`"
 * @example redactSecrets(`No API key found with name: ${generateSecret().slice(5)}`) // "No API key found with name: …"
 */
export function redactSecrets(text: string): string {
  let out = "";
  let from = 0;
  for (const [start, end] of secretSpans(text)) {
    if (start < from) continue; // overlapping windows of one secret
    out += text.slice(from, start) + "…";
    from = end;
  }
  out = from === 0 ? text : out + text.slice(from);
  // A fragment of six characters or more; shorter ones say nothing (the scanner's masks, `sapi_Gj…1Ga`).
  return out.replace(/(sapi_)[0-9a-z]{6,}/gi, "$1…");
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
 * True when a secret's body and checksum appear anywhere in `text` (see `secretSpans`): with or without
 * the `sapi_` prefix, glued to other letters, or broken by whitespace. The checksum makes this exact (a
 * chance match is about 1 in 62^6 per position), so prose that merely mentions `sapi_` does not match.
 * @example containsSecret(`token ${generateSecret()} for CI`) // true
 */
export function containsSecret(text: string): boolean {
  return secretSpans(text, true).length > 0;
}

const CHAR_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) CHAR_VALUE[ALPHABET.charCodeAt(i)] = i;
const crcStep = (crc: number, byte: number) => CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);

/**
 * What sliding a 43-character CRC-32 window by one takes away: the last character's contribution after
 * 43 more steps (`out[c]`) and the initial value's (`init`). CRC-32 is linear, so a window's register is
 * the previous one stepped with the new character, XOR these. Built on first use.
 */
const ROLLING = once(() => {
  const zeros = (crc: number, n: number) => {
    for (let i = 0; i < n; i++) crc = crcStep(crc, 0);
    return crc;
  };
  const out = new Uint32Array(128);
  for (let c = 0; c < 128; c++) out[c] = zeros(CRC_TABLE[c], BODY_LENGTH);
  return { out, init: (zeros(0xffffffff, BODY_LENGTH + 1) ^ zeros(0xffffffff, BODY_LENGTH)) >>> 0 };
});

/**
 * Where secrets are in `text`: the [start, end) of every 49 characters of the alphabet whose last 6 are
 * the checksum of the first 43. Whitespace and the escapes `\n` `\r` `\t` between them are skipped, so
 * a secret broken over lines, or quoted in JSON, is found too. One pass (a rolling CRC): cheap on long text.
 */
export function secretSpans(text: string, first = false): [number, number][] {
  const spans: [number, number][] = [];
  const at: number[] = []; // where each character of the current run is in `text`
  const values: number[] = [];
  const { out, init } = ROLLING();
  let crc = 0xffffffff;
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : 32;
    if (code < 128 && CHAR_VALUE[code] >= 0) {
      const n = at.push(i);
      values.push(CHAR_VALUE[code]);
      // The register over the 43 characters ending CHECK_LENGTH before this one.
      const enter = n - 1 - CHECK_LENGTH;
      if (enter >= 0) {
        crc = crcStep(crc, text.charCodeAt(at[enter]));
        if (enter >= BODY_LENGTH) crc = (crc ^ out[text.charCodeAt(at[enter - BODY_LENGTH])] ^ init) >>> 0;
      }
      if (enter >= BODY_LENGTH - 1 && checksumAt(values, n - CHECK_LENGTH) === ((crc ^ 0xffffffff) >>> 0)) {
        spans.push([at[n - BODY_LENGTH - CHECK_LENGTH], i + 1]);
        if (first) return spans;
      }
    } else if (code === 92 && at.length && /[nrt]/.test(text[i + 1] ?? "")) {
      i++; // an escaped newline, carriage return or tab inside a run
    } else if (!(code === 32 || (code >= 9 && code <= 13) || (at.length && /\s/.test(text[i])))) {
      at.length = values.length = 0;
      crc = 0xffffffff;
    }
  }
  return spans;
}

/** The number 6 base62 digits from `from` in `values` spell. */
function checksumAt(values: number[], from: number): number {
  let n = 0;
  for (let k = from; k < from + CHECK_LENGTH; k++) n = n * 62 + values[k];
  return n;
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
