/**
 * Scanning one input (a file, standard input) for secrets in fixed-size chunks, so memory stays the
 * same whatever its size. The last MAX_TOKEN_SPAN bytes of a chunk are carried to the front of the
 * next, so a secret across a chunk boundary is still found, once.
 *
 * The search is for `_` (memchr, native) and then `sapi` before it: text without secrets costs little
 * more than reading it. Lines are counted only where they are needed: for a file, by reading it again
 * up to the last secret found (most files have none); for a pipe, as the bytes go by.
 */
import { MAX_TOKEN_SPAN, PREFIX_BYTES, tokenAt, type TokenAt } from "../core/scan-pattern.ts";

export const CHUNK_BYTES = 1 << 20;
/** A file whose first bytes hold a NUL is binary, as git and grep decide. */
const BINARY_PROBE = 8192;
/** In a chunk with more `_` than this, search for the whole prefix instead: fewer, longer native calls. */
const UNDERSCORES_PER_CHUNK = 4096;

const UNDERSCORE = 0x5f;
const [S, A, P, I] = PREFIX_BYTES;

/** Reads up to `length` bytes into `buffer` at `offset`; 0 at the end. */
export type Reader = (buffer: Uint8Array, offset: number, length: number) => Promise<number>;

export interface Found extends TokenAt {
  /** Byte offset of the secret's first character in the input. */
  offset: number;
  /** Its line and column, when lines are counted as the bytes go by. */
  place?: Place;
}

/** Where a byte offset is: 1-based line, and 1-based column in characters (UTF-8 code points). */
export interface Place {
  line: number;
  column: number;
}

/**
 * Counts lines and columns over bytes given in order, and places the offsets asked for on the way.
 * `feed` takes the next bytes (`bytes[from..to]`, which start at input offset `base + from`) and the
 * offsets inside them to place, ascending.
 */
export function createLocator() {
  let line = 1;
  /** Characters since the last line break, over the bytes fed so far. */
  let column = 0;
  const chars = (bytes: Uint8Array, from: number, to: number) => {
    let n = 0;
    for (let i = from; i < to; i++) if ((bytes[i] & 0xc0) !== 0x80) n++;
    return n;
  };
  const advance = (bytes: Buffer, from: number, to: number) => {
    let lastBreak = -1;
    const upTo = bytes.subarray(0, to); // so a search never runs past `to`
    for (let at = upTo.indexOf(10, from); at !== -1; at = upTo.indexOf(10, at + 1)) {
      line++;
      lastBreak = at;
    }
    column = lastBreak === -1 ? column + chars(bytes, from, to) : chars(bytes, lastBreak + 1, to);
  };
  return {
    feed(bytes: Buffer, from: number, to: number, base: number, offsets: readonly number[], place: (offset: number, at: Place) => void) {
      let at = from;
      for (const offset of offsets) {
        advance(bytes, at, offset - base);
        at = offset - base;
        place(offset, { line, column: column + 1 });
      }
      advance(bytes, at, to);
    },
  };
}

/** What scanning an input read, and whether it was left unscanned. */
export interface SourceScan {
  bytes: number;
  /** True when the input was left unscanned because its first bytes hold a NUL. */
  binary: boolean;
}

/** Offsets in `buf[0..to]` where a secret's prefix starts (`buf` holds at least 4 bytes past `to`, or ends there). */
function prefixes(buf: Buffer, to: number): number[] {
  const starts: number[] = [];
  let seen = 0;
  for (let at = buf.indexOf(UNDERSCORE, 4); at !== -1 && at < to + 4; at = buf.indexOf(UNDERSCORE, at + 1)) {
    if (buf[at - 1] === I && buf[at - 2] === P && buf[at - 3] === A && buf[at - 4] === S) starts.push(at - 4);
    if (++seen > UNDERSCORES_PER_CHUNK) {
      for (let p = buf.indexOf(PREFIX_BYTES, at - 3); p !== -1 && p < to; p = buf.indexOf(PREFIX_BYTES, p + 1)) starts.push(p);
      break;
    }
  }
  return starts;
}

/**
 * Scans an input read through `read`, telling `onFound` of each secret in input order. With
 * `countLines`, lines are counted as the bytes go by and each secret comes with its place (for an input
 * that cannot be read twice); without, the caller places what it keeps with `locateAgain`.
 */
export async function scanSource(
  read: Reader,
  options: { skipBinary?: boolean; countLines?: boolean; onFound: (found: Found) => Promise<void> | void },
): Promise<SourceScan> {
  const buf = Buffer.allocUnsafe(CHUNK_BYTES + MAX_TOKEN_SPAN);
  const locator = options.countLines ? createLocator() : undefined;
  let kept = 0; // bytes carried to the front of buf, not yet searched
  let base = 0; // input offset of buf[0]
  let total = 0;
  for (let first = true; ; first = false) {
    const n = await read(buf, kept, CHUNK_BYTES);
    total += n;
    const len = kept + n;
    const view = buf.subarray(0, len);
    if (first && options.skipBinary && view.subarray(0, BINARY_PROBE).includes(0)) return { bytes: total, binary: true };
    const end = n === 0 ? len : Math.max(0, len - MAX_TOKEN_SPAN); // prefixes from here on are searched next time
    const here: Found[] = [];
    for (const at of prefixes(view, end)) {
      const token = tokenAt(view, at, len);
      if (token) here.push({ ...token, offset: base + at });
    }
    if (locator) {
      const byOffset = new Map(here.map((f) => [f.offset, f]));
      locator.feed(view, 0, end, base, here.map((f) => f.offset), (offset, at) => (byOffset.get(offset)!.place = at));
    }
    for (const f of here) await options.onFound(f);
    if (n === 0) return { bytes: total, binary: false };
    buf.copyWithin(0, end, len);
    base += end;
    kept = len - end;
  }
}

/** Places `offsets` (ascending) by reading the input again from its start, up to the last of them. */
export async function locateAgain(read: Reader, offsets: readonly number[], place: (offset: number, at: Place) => void): Promise<void> {
  if (!offsets.length) return;
  const buf = Buffer.allocUnsafe(CHUNK_BYTES);
  const locator = createLocator();
  let base = 0;
  let next = 0;
  while (next < offsets.length) {
    const n = await read(buf, 0, CHUNK_BYTES);
    if (n === 0) return; // the input shrank meanwhile: what is left cannot be placed
    const upTo = offsets.slice(next).findIndex((o) => o >= base + n);
    const these = offsets.slice(next, upTo === -1 ? offsets.length : next + upTo);
    locator.feed(buf, 0, n, base, these, place);
    next += these.length;
    base += n;
  }
}
