// The in-process rate limiter (files and memory stores, and failed authentications per address): what it
// counts, and that a key in use is not forgotten while many others pass through its bounded memory.
import { describe, expect, it } from "vitest";
import { createMemoryRateLimiter, type RateVerdict } from "../../lib/store/rate-limiter.ts";

const minute = [{ limit: 3, durationMs: 60_000 }];
const sync = (verdict: RateVerdict | Promise<RateVerdict>) => verdict as RateVerdict;

describe("createMemoryRateLimiter", () => {
  it("counts each allowed request, refuses at the limit without counting, and starts afresh when the window ends", () => {
    const limiter = createMemoryRateLimiter();
    const hits = [0, 1, 2, 3].map((i) => sync(limiter.hit("k", minute, 1_000 + i)));
    expect(hits.map((v) => [v.allowed, v.remaining])).toEqual([[true, 2], [true, 1], [true, 0], [false, 0]]);
    expect(hits[3].resetMs).toBe(60_000 - 3);
    expect(sync(limiter.hit("other", minute, 1_010)).remaining).toBe(2); // keys count apart
    const next = sync(limiter.hit("k", minute, 61_000));
    expect([next.allowed, next.remaining, next.resetMs]).toEqual([true, 2, 60_000]);
  });

  it("with two limits, allows only when both have room, counts both, and tells each", () => {
    const limiter = createMemoryRateLimiter();
    const limits = [{ limit: 2, durationMs: 1_000 }, { limit: 3, durationMs: 60_000 }];
    const v = [0, 1, 2, 1_500, 1_600].map((t) => sync(limiter.hit("k", limits, t)));
    expect(v.map((x) => x.allowed)).toEqual([true, true, false, true, false]);
    expect(v[1].each).toEqual([{ remaining: 0, resetMs: 999 }, { remaining: 1, resetMs: 59_999 }]);
    expect([v[4].limit, v[4].remaining, v[4].resetMs]).toEqual([3, 0, 58_400]); // the full one that ends last
  });

  it("keeps a key in use while a hundred times its bound of other keys pass through", () => {
    const limiter = createMemoryRateLimiter(100);
    for (let i = 0; i < 3; i++) limiter.hit("busy", minute, 0);
    for (let i = 0; i < 10_000; i++) {
      limiter.hit(`passing ${i}`, minute, 1);
      // Used (refused) every 50 others: a bound of 100 that forgot by age alone would let it start afresh.
      if (i % 50 === 0) expect(sync(limiter.hit("busy", minute, 2)).allowed).toBe(false);
    }
    // Keys not used since are forgotten: the bound holds.
    expect(sync(limiter.hit("passing 0", minute, 3)).remaining).toBe(2);
  });
});
