// The slot table behind the throttle's memory of addresses (lib/core/slot-lru.ts): its order of use,
// its bound, and data kept in the owner's arrays across growth.
import { describe, expect, it } from "vitest";
import { createSlotLru, grown } from "../../lib/core/slot-lru.ts";

describe("createSlotLru", () => {
  it("forgets the least recently used key when full, and keeps the owner's data through growth", () => {
    let data = new Float64Array(0);
    const table = createSlotLru<string>(3_000, (capacity) => (data = grown(data, capacity)));
    for (let i = 0; i < 3_000; i++) {
      const slot = table.add(`k${i}`); // grows from 1,024 slots to 3,000: `data` is then another array
      data[slot] = i;
    }
    expect(data.length).toBe(3_000);
    expect(table.find("k0")).toBeGreaterThanOrEqual(0); // k0 is now the most recent, k1 the least
    const slot = table.add("new");
    expect(table.find("k1")).toBe(-1);
    expect(table.size).toBe(3_000);
    data[slot] = -1;
    for (let i = 2; i < 3_000; i++) expect(data[table.find(`k${i}`)]).toBe(i);
    expect(data[table.find("k0")]).toBe(0);
  });

  it("gives a deleted key's slot to the next key, and forgets in order of use", () => {
    const table = createSlotLru<number>(3, () => {});
    const [a, b] = [table.add(1), table.add(2), table.add(3)];
    table.delete(1);
    expect(table.find(1)).toBe(-1);
    expect(table.add(4)).toBe(a);
    table.find(2); // 3 is now the least recent
    table.add(5);
    expect([table.find(3), table.find(2), table.size]).toEqual([-1, b, 3]);
  });
});
