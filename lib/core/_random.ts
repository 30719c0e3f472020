/**
 * Random bytes and v4 UUIDs from the system CSPRNG without node:crypto, which in Node 20 loads the
 * stream modules with it (about 4 ms of a 90 ms create, for a few dozen random bytes).
 *
 * Where the kernel's generator is a character device the bytes are read from /dev/random without
 * blocking. On Linux 5.6 and later that is getrandom(2), the call OpenSSL (so node:crypto) uses: it
 * never blocks once the generator is seeded, and before that it answers EAGAIN instead of unseeded
 * bytes (which /dev/urandom would give in the first moments after a boot, a cloud-init script making
 * keys, say). Older kernels answer EAGAIN when their entropy estimate runs low. The device is trusted
 * only on Linux and only when it is the kernel's generator itself (character device 1:8 or 1:9): any
 * character device will do for `isCharacterDevice()`, and /dev/zero bind-mounted in its place gave
 * all-zero secrets and ids. Whenever the device cannot be opened, is not that, or would block, the Web
 * Crypto `crypto.getRandomValues` (Node, Deno; it waits for a seeded generator) gives the bytes instead,
 * or node:crypto's `randomFillSync` where the global is switched off. Bytes are read into a small pool,
 * each handed out once and zeroed as it is taken.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

const POOL_SIZE = 256;
/** Linux's random devices as `stat` encodes them (major 1; minor 8 is /dev/random, 9 /dev/urandom). */
const KERNEL_GENERATOR = new Set([(1 << 8) | 8, (1 << 8) | 9]);
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
    const device = fstatSync(fd);
    if (globalThis.process?.platform !== "linux" || !device.isCharacterDevice() || !KERNEL_GENERATOR.has(device.rdev)) return false;
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
  const webCrypto = globalThis.crypto;
  if (typeof webCrypto?.getRandomValues === "function") {
    // getRandomValues takes at most 65,536 bytes a call.
    for (let at = 0; at < target.length; at += 65536) webCrypto.getRandomValues(target.subarray(at, at + 65536));
    return;
  }
  // `node --no-experimental-global-webcrypto`: node:crypto itself.
  const nodeCrypto = loadNodeCrypto();
  if (!nodeCrypto) throw new Error("No source of random bytes: the kernel's generator, Web Crypto and node:crypto are all unavailable");
  nodeCrypto.randomFillSync(target);
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

/**
 * node:crypto, loaded only when asked: through `process.getBuiltinModule` (Node 20.16+, 22.3+, Deno) or the
 * CommonJS `require` of the bundled CLI; undefined where neither exists (an ES module on an older Node 20).
 */
export function loadNodeCrypto(): typeof import("node:crypto") | undefined {
  try {
    return globalThis.process?.getBuiltinModule?.("node:crypto") ?? (typeof require === "function" ? require("node:crypto") : undefined);
  } catch {
    return undefined;
  }
}
