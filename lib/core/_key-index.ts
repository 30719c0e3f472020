/**
 * Keys in the order they are listed (oldest first, then by id), as 24 bytes a key: the creation time
 * (ms) and the id's 16 bytes. The streamed `--list` (and GraphQL's pages, on a store without an index,
 * lib/store/paging.ts) put keys in order with it without holding the keys themselves. With `graceLast`, of
 * keys created in one millisecond those in a grace period come after the live ones, as `list` has them; pages leave it off, so that a key's position never
 * moves when it enters a grace period.
 */
import type { ApiKeyInfo } from "./model.ts";

const idBytes = (id: string, into: Uint8Array, at: number) => {
  const hex = id.replaceAll("-", "");
  for (let i = 0; i < 16; i++) into[at + i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
};

export class KeyIndex {
  private times = new Float64Array(1024);
  private ids = new Uint8Array(1024 * 16);
  private graced = new Uint8Array(1024);
  private sorted?: Uint32Array;
  size = 0;

  private readonly graceLast: boolean;

  constructor(graceLast = false) {
    this.graceLast = graceLast;
  }

  /** Adds a key (its id must be a UUID, as the store makes them). */
  add(key: Pick<ApiKeyInfo, "id" | "createdAt" | "graceUntil">): void {
    if (this.size === this.times.length) {
      const times = new Float64Array(this.size * 2);
      times.set(this.times);
      const ids = new Uint8Array(this.size * 32);
      ids.set(this.ids);
      const graced = new Uint8Array(this.size * 2);
      graced.set(this.graced);
      [this.times, this.ids, this.graced] = [times, ids, graced];
    }
    this.times[this.size] = Date.parse(key.createdAt);
    this.graced[this.size] = this.graceLast && key.graceUntil ? 1 : 0;
    idBytes(key.id, this.ids, this.size * 16);
    this.size++;
    this.sorted = undefined;
  }

  /** The id of the key at position `at` of `order()`. */
  idAt(at: number): string {
    const i = this.order()[at];
    let hex = "";
    for (let b = 0; b < 16; b++) hex += this.ids[i * 16 + b].toString(16).padStart(2, "0");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  /** Positions of the keys, oldest first, then by id. */
  order(): Uint32Array {
    return this.sorted ??= Uint32Array.from({ length: this.size }, (_, i) => i).sort((a, b) => this.compare(a, b));
  }

  /** The first position of `order()` after a key created at `ms` with this id (present or not). */
  after(ms: number, id: string): number {
    const probe = new Uint8Array(16);
    idBytes(id, probe, 0);
    const order = this.order();
    let [lo, hi] = [0, order.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const i = order[mid];
      const diff = this.times[i] - ms || compareBytes(this.ids, i * 16, probe, 0);
      if (diff <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private compare(a: number, b: number): number {
    return this.times[a] - this.times[b] || this.graced[a] - this.graced[b] || compareBytes(this.ids, a * 16, this.ids, b * 16);
  }
}

function compareBytes(x: Uint8Array, a: number, y: Uint8Array, b: number): number {
  for (let i = 0; i < 16; i++) if (x[a + i] !== y[b + i]) return x[a + i] - y[b + i];
  return 0;
}
