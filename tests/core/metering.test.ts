// No un-metering: what "more use" means between a key with credits or rate limits and a key it gives them.
import { describe, expect, it } from "vitest";
import { meteringEscalation } from "../../lib/core/metering.ts";

const S = 1_000;
const H = 3_600_000;

describe("meteringEscalation", () => {
  it("lets a caller without credits nor limits give anything, none included", () => {
    expect(meteringEscalation({}, {})).toEqual([]);
    expect(meteringEscalation({ credits: null, rateLimits: [] }, { credits: { remaining: 1e9 }, rateLimits: [] })).toEqual([]);
  });

  it("holds credits to what the caller has left, and a refill to one no larger nor more frequent", () => {
    const caller = { credits: { remaining: 10, refill: { amount: 100, interval: "month" as const } } };
    expect(meteringEscalation(caller, { credits: { remaining: 10 } })).toEqual([]);
    expect(meteringEscalation(caller, { credits: { remaining: 3, refill: { amount: 100, interval: "month" } } })).toEqual([]);
    expect(meteringEscalation(caller, { credits: null })).toEqual(["credits, at most the 10 this key has left"]);
    expect(meteringEscalation(caller, { credits: { remaining: 11 } })).toEqual(["credits, at most the 10 this key has left"]);
    expect(meteringEscalation(caller, { credits: { remaining: 1, refill: { amount: 101, interval: "month" } } })).toHaveLength(1);
    expect(meteringEscalation(caller, { credits: { remaining: 1, refill: { amount: 100, interval: "day" } } })).toEqual([
      "a refill no larger nor more frequent than this key's 100/month",
    ]);
    expect(meteringEscalation({ credits: { remaining: 10 } }, { credits: { remaining: 1, refill: { amount: 1, interval: "month" } } })).toEqual(["no refill (this key has none)"]);
    // Its limits bind nothing it has not: a key with credits alone may give any limits.
    expect(meteringEscalation(caller, { credits: { remaining: 1 }, rateLimits: [] })).toEqual([]);
  });

  it("matches each of the caller's limits with one allowing no more requests over a window no shorter", () => {
    const caller = { rateLimits: [{ limit: 10, durationMs: S }, { limit: 1000, durationMs: H }] };
    expect(meteringEscalation(caller, { rateLimits: [{ limit: 5, durationMs: S }, { limit: 1000, durationMs: 2 * H }] })).toEqual([]);
    expect(meteringEscalation(caller, { rateLimits: [{ limit: 10, durationMs: 60 * S }, { limit: 500, durationMs: H }] })).toEqual([]);
    expect(meteringEscalation(caller, { rateLimits: [{ limit: 20, durationMs: S }, { limit: 1000, durationMs: H }] })).toEqual([
      "a rate limit at least as strict as this key's 10/1s (at most 10 requests per 1s or longer)",
    ]);
    expect(meteringEscalation(caller, { rateLimits: [{ limit: 10, durationMs: S }] })).toHaveLength(1); // the hour's limit dropped
    expect(meteringEscalation(caller, { rateLimits: [] })).toHaveLength(2);
    expect(meteringEscalation(caller, {})).toHaveLength(2);
  });

  it("holds a key setting its own limits to each window it has, whose count goes on (a longer one would start empty)", () => {
    const own = { rateLimits: [{ limit: 3, durationMs: H }] };
    expect(meteringEscalation(own, { rateLimits: [{ limit: 2, durationMs: H }, { limit: 1, durationMs: S }] }, true)).toEqual([]);
    const longer = meteringEscalation(own, { rateLimits: [{ limit: 3, durationMs: H + S }] }, true);
    expect(longer).toEqual([expect.stringMatching(/^a rate limit as strict as its own 3\/1h over the same window .* its count would start afresh$/)]);
    // The same limits given to another key are no more use than the caller's.
    expect(meteringEscalation(own, { rateLimits: [{ limit: 3, durationMs: H + S }] })).toEqual([]);
    expect(meteringEscalation(own, { rateLimits: [] }, true)).toHaveLength(1);
  });
});
