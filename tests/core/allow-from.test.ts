import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { ALLOW_FROM_MAX, AllowFromSchema, allowedFrom, checkAllowFrom } from "../../lib/core/allow-from.ts";
import { ServiceError } from "../../lib/core/errors.ts";

const refused = (value: unknown): string => {
  try {
    checkAllowFrom(value);
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe("INVALID_INPUT");
    return (error as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(value)} to be refused`);
};

describe("allow-list input", () => {
  it("stores single addresses as /32 and /128, blocks with host bits cleared, IPv6 compressed", () => {
    expect(checkAllowFrom("192.0.2.7, 10.1.2.3/8 ,2001:DB8:0:0:0:0:0:1, 2001:db8:abcd::/32")).toEqual([
      "192.0.2.7/32", "10.0.0.0/8", "2001:db8::1/128", "2001:db8::/32",
    ]);
  });

  it("stores an IPv4-mapped IPv6 entry as its IPv4 form", () => {
    expect(checkAllowFrom(["::ffff:192.0.2.7", "::ffff:198.51.100.0/120"])).toEqual(["192.0.2.7/32", "198.51.100.0/24"]);
  });

  it("drops duplicates, whatever their spelling", () => {
    expect(checkAllowFrom("10.0.0.1, 10.0.0.1/32, ::ffff:10.0.0.1")).toEqual(["10.0.0.1/32"]);
  });

  it("takes any alone as no list, from the flag", () => {
    expect(checkAllowFrom("any")).toEqual([]);
    expect(checkAllowFrom([])).toEqual([]);
  });

  it.each([
    ["10.0.0.256", "\"10.0.0.256\" is not an IP address"],
    ["127.1", "\"127.1\" is not an IP address"],
    ["0x7f.0.0.1", "is not an IP address"],
    ["10.0.0.0/33", "\"10.0.0.0/33\" has a prefix length outside 0 to 32"],
    ["::1/129", "outside 0 to 128"],
    ["10.0.0.0/8/1", "is not an IP address or CIDR block"],
    ["fe80::1%eth0", "is not an IP address"],
    ["192.0.2.7, example.com", "\"example.com\" is not an IP address"],
    [",", "An allow-list needs IP addresses"],
  ])("refuses %j naming the entry", (value, message) => {
    expect(refused(value)).toContain(message);
  });

  it("refuses a list that is not strings", () => {
    expect(refused([1, 2])).toContain("An allow-list is IP addresses or CIDR blocks");
  });

  it(`holds at most ${ALLOW_FROM_MAX} entries`, () => {
    const list = Array.from({ length: ALLOW_FROM_MAX + 1 }, (_, i) => `10.0.${i}.0/24`);
    expect(checkAllowFrom(list.slice(0, ALLOW_FROM_MAX))).toHaveLength(ALLOW_FROM_MAX);
    expect(refused(list)).toContain(`at most ${ALLOW_FROM_MAX} entries`);
  });

  it("is a valibot schema with the same messages", () => {
    expect(v.parse(AllowFromSchema, "192.0.2.0/24")).toEqual(["192.0.2.0/24"]);
    const result = v.safeParse(AllowFromSchema, ["nope"]);
    expect(result.success).toBe(false);
    expect(result.issues?.[0].message).toContain("\"nope\" is not an IP address");
  });
});

describe("allowedFrom", () => {
  it("admits any address when there is no list", () => {
    expect(allowedFrom(undefined, "203.0.113.9")).toBe(true);
    expect(allowedFrom([], "2001:db8::1")).toBe(true);
  });

  it("admits addresses inside a block and refuses those outside", () => {
    const list = checkAllowFrom("10.0.0.0/8,192.0.2.7,2001:db8::/32");
    expect(allowedFrom(list, "10.200.3.4")).toBe(true);
    expect(allowedFrom(list, "192.0.2.7")).toBe(true);
    expect(allowedFrom(list, "192.0.2.8")).toBe(false);
    expect(allowedFrom(list, "11.0.0.1")).toBe(false);
    expect(allowedFrom(list, "2001:db8:ffff::1")).toBe(true);
    expect(allowedFrom(list, "2001:db9::1")).toBe(false);
  });

  it("matches an IPv4-mapped IPv6 client as its IPv4 address, as text or bytes", () => {
    const list = checkAllowFrom("127.0.0.1");
    expect(allowedFrom(list, "::ffff:127.0.0.1")).toBe(true);
    expect(allowedFrom(list, "::ffff:7f00:1")).toBe(true);
    expect(allowedFrom(list, [127, 0, 0, 1])).toBe(true);
    expect(allowedFrom(list, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 127, 0, 0, 1])).toBe(true);
    expect(allowedFrom(list, "::ffff:127.0.0.2")).toBe(false);
  });

  it("takes /0 as every address of its family only", () => {
    expect(allowedFrom(checkAllowFrom("0.0.0.0/0"), "203.0.113.9")).toBe(true);
    expect(allowedFrom(checkAllowFrom("0.0.0.0/0"), "2001:db8::1")).toBe(false);
    expect(allowedFrom(checkAllowFrom("::/0"), "2001:db8::1")).toBe(true);
    expect(allowedFrom(checkAllowFrom("::/0"), "203.0.113.9")).toBe(false);
  });

  it("takes /128 as exactly one IPv6 address", () => {
    const list = checkAllowFrom("2001:db8::7/128");
    expect(allowedFrom(list, "2001:db8::7")).toBe(true);
    expect(allowedFrom(list, "2001:db8:0:0:0:0:0:7")).toBe(true);
    expect(allowedFrom(list, "2001:db8::6")).toBe(false);
  });

  it("refuses an unknown or garbled address, and everything for a list that does not parse", () => {
    const list = checkAllowFrom("0.0.0.0/0");
    expect(allowedFrom(list, undefined)).toBe(false);
    expect(allowedFrom(list, "unknown")).toBe(false);
    expect(allowedFrom(list, "127.1")).toBe(false);
    expect(allowedFrom(["0.0.0.0/0", "garbage"], "10.0.0.1")).toBe(false);
  });
});
