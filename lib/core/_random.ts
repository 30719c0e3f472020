/**
 * Random bytes and v4 UUIDs from the system CSPRNG without node:crypto, which in Node 20 loads the
 * stream modules with it (about 4 ms of a 90 ms create, for a few dozen random bytes).
 *
 * Where the kernel's generator is a character device the bytes are read from /dev/random without
 * blocking. On Linux 5.6 and later that is getrandom(2), the call OpenSSL (so node:crypto) uses: it
 * never blocks once the generator is seeded, and before that it answers EAGAIN instead of unseeded
 * bytes (which /dev/urandom would give in the first moments after a boot, a cloud-init script making
 * keys, say). Older kernels answer EAGAIN when their entropy estimate runs low. On macOS and the BSDs it
 * is the seeded generator. Whenever the device cannot be opened, is not a character device (a sandbox,
 * a file put in its place), or would block, the Web Crypto `crypto.getRandomValues` (Node, Deno, which
 * waits for a seeded generator) gives them instead. Bytes are read into a small pool, each handed out
 * once and zeroed as it is taken.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

const POOL_SIZE = 256;
const pool: Uint8Array<ArrayBuffer> = new Uint8Array(POOL_SIZE);
let used = POOL_SIZE; // pool[used..] not handed out yet

/** Fills `target` with bytes from the kernel's generator, or returns false when it cannot be read at once. */
function fromDevice(target: Uint8Array): boolean {
  let fd: number;
  try {
    fd = openSync("/dev/random", constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    if (!fstatSync(fd).isCharacterDevice()) return false;
    for (let at = 0; at < target.length; ) {
      const got = readSync(fd, target, at, target.length - at, null);
      if (got <= 0) return false; // EAGAIN throws: caught below, and getRandomValues fills all of it
      at += got;
    }
    return true;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

function fill(target: Uint8Array<ArrayBuffer>): void {
  if (fromDevice(target)) return;
  // getRandomValues takes at most 65,536 bytes a call.
  for (let at = 0; at < target.length; at += 65536) globalThis.crypto.getRandomValues(target.subarray(at, at + 65536));
}

/** `length` bytes from the system CSPRNG. */
export function randomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  if (length > POOL_SIZE) {
    fill(out);
    return out;
  }
  if (POOL_SIZE - used < length) {
    fill(pool);
    used = 0;
  }
  out.set(pool.subarray(used, used + length));
  pool.fill(0, used, used + length);
  used += length;
  return out;
}

const HEX = Array.from({ length: 256 }, (_, n) => n.toString(16).padStart(2, "0"));

/** A random (version 4, RFC 9562) UUID, in the form `crypto.randomUUID()` gives. */
export function randomUUID(): string {
  const b = randomBytes(16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = (from: number, to: number) => {
    let s = "";
    for (let i = from; i < to; i++) s += HEX[b[i]];
    return s;
  };
  return `${h(0, 4)}-${h(4, 6)}-${h(6, 8)}-${h(8, 10)}-${h(10, 16)}`;
}
