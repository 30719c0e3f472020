// The bounded map behind the document, verification and answer caches.
import { expect, it } from "vitest";
import { createLru } from "../../lib/core/_lru.ts";

it("never holds more than its bound, and evicts the least recently used entry first", () => {
  const lru = createLru<string, number>(4);
  for (const [i, key] of ["a", "b", "c", "d"].entries()) lru.set(key, i);
  expect(lru.get("a")).toBe(0); // a is now the most recent
  lru.set("e", 4);
  expect(lru.size).toBe(4);
  expect(lru.get("b")).toBeUndefined(); // b was the least recently used
  expect(lru.get("a")).toBe(0);
  lru.set("c", 9); // overwriting refreshes too
  lru.set("f", 5);
  lru.set("g", 6);
  expect([lru.get("a"), lru.get("c"), lru.get("d"), lru.get("e")]).toEqual([0, 9, undefined, undefined]);
  lru.delete("c");
  expect(lru.get("c")).toBeUndefined();
  expect(lru.size).toBe(3);
});
