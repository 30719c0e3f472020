// Hostile input, generated with fast-check: whatever a person, a script or an attacker passes as a
// name, role or permission is either accepted as valid, normalized input or rejected with one
// ServiceError("INVALID_INPUT") whose message is a short, single, printable line; the real CLI turns
// it into exit 2 and one line on stderr and creates nothing. Forged and truncated keys never verify.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "../../lib/core/errors.ts";
import { NAME_MAX, parseCreateInput } from "../../lib/core/input.ts";
import { ACTIONS, RESOURCES, ROLES } from "../../lib/core/model.ts";
import { generateSecret, SECRET_PREFIX } from "../../lib/core/secret.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { cliWithStore } from "../helpers/cli.ts";

// Characters attackers use to spoof, smuggle or break things.
const NASTY = [
  "\u0000", "\u0007", "\u001b[31m", "\r", "\n", "\t", "\u007f", "\u0085", "\u009b", // controls, ANSI CSI
  "\u202e", "\u202d", "\u2066", "\u2069", "\u200f", // bidi overrides, isolates, RTL mark
  "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", // zero-width
  "\u0301", "\u0308", "\u20dd", // combining marks
  "🔑", "👩‍💻", "🏳️‍🌈", "\ud800", "\udfff", // emoji, ZWJ sequences, lone surrogates
  "\u2028", "\u2029", "\u00a0", "\u3000", // separators and odd spaces
  "$(id)", "`id`", "; rm -rf /", "| cat", "&&", ">", "'", "\"", "\\", "%s", "%n", "${HOME}",
  "../../etc/passwd", "..", "/", ":", "*", "?", "-", "_", ".", ",",
  "__proto__", "constructor", "prototype", "toString", "hasOwnProperty",
];
const nasty = fc.constantFrom(...NASTY);
const letters = fc.string({ unit: fc.constantFrom(..."aZéß東京Жω1 ٣".split("")), maxLength: 30 });
const hostileName = fc.oneof(
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({ unit: "grapheme", maxLength: 60 }),
  fc.array(fc.oneof(nasty, letters), { minLength: 1, maxLength: 8 }).map((parts) => parts.join("")),
  fc.tuple(letters, nasty, letters).map(([a, b, c]) => a + b + c),
  fc.integer({ min: 95, max: 5_000 }).chain((n) => fc.constantFrom("a", "é", "東", "🔑", "\u202e").map((c) => c.repeat(n))),
  nasty,
);
const word = fc.oneof(fc.constantFrom(...ROLES, ...RESOURCES, ...ACTIONS), fc.string({ maxLength: 12 }), nasty);
const hostileList = fc.oneof(
  fc.array(word, { maxLength: 6 }).map((w) => w.join(",")),
  fc.array(fc.tuple(word, word), { maxLength: 5 }).map((pairs) => pairs.map(([r, a]) => `${r}:${a}`).join(",")),
  fc.integer({ min: 1_000, max: 5_000 }).map((n) => "X".repeat(n)),
  fc.constantFrom("\u202eNIMDA", "ADMIN\u0000", "ADMIN,,,", "admin ,\tviewer", "DOCKER:READ_ANY:x", ":", ",:,"),
  fc.constant(null).map(() => generateSecret()), // a key pasted into the wrong flag
  fc.constant(null).map(() => `DOCKER:${generateSecret()}`),
);

/** A rejection a person can read: one ServiceError INVALID_INPUT, one short printable line. */
function expectCleanRejection(error: unknown) {
  expect(error).toBeInstanceOf(ServiceError);
  const { code, message } = error as ServiceError;
  expect(code).toBe("INVALID_INPUT");
  expect(message.length).toBeGreaterThan(0);
  expect(message.length).toBeLessThanOrEqual(500);
  expect(message).not.toMatch(/[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u);
  expect(message, "a key pasted into the wrong flag is not echoed").not.toMatch(/sapi_[0-9a-z]{6}/i);
}

/** Parses and checks the outcome; returns whether the input was accepted. */
function parseOrReject(input: Record<string, unknown>): boolean {
  let output;
  try {
    output = parseCreateInput(input);
  } catch (error) {
    expectCleanRejection(error);
    return false;
  }
  // Letters (with their own script's combining marks, as Devanagari and Tamil need), digits and single
  // spaces, starting and ending with a letter or digit; never an enclosing mark or one of no script.
  expect(output.name).toMatch(/^(?:[\p{L}\p{N}][\p{Mn}\p{Mc}]*)(?: ?(?:[\p{L}\p{N}][\p{Mn}\p{Mc}]*))*$/u);
  expect(output.name).not.toMatch(/\p{Me}|(?=\p{M})[\p{Script=Inherited}\p{Script=Common}]/u);
  expect([...output.name].length).toBeLessThanOrEqual(NAME_MAX);
  expect(output.name).toBe(output.name.normalize("NFC"));
  expect(output.description ?? "").not.toMatch(/[\p{Cc}\u202a-\u202e\u2066-\u2069]/u);
  for (const role of output.roles) expect(ROLES).toContain(role);
  for (const p of output.permissions) {
    expect(RESOURCES).toContain(p.resource);
    for (const a of p.actions) expect(ACTIONS).toContain(a);
  }
  expect(output.roles.length + output.permissions.length).toBeGreaterThan(0);
  return true;
}

describe("parseCreateInput under fuzzed input", () => {
  it("accepts a hostile name only when it is letters (with their script's marks), digits and single spaces, else rejects it cleanly", () => {
    fc.assert(fc.property(hostileName, (name) => void parseOrReject({ name, roles: "ADMIN" })), { numRuns: 1_500 });
  });

  it("rejects every name containing a control, bidi, zero-width, combining or symbol character", () => {
    const bad = NASTY.filter((c) => !/^[\p{L}\p{N} ]+$/u.test(c.normalize("NFC")) && c.trim() !== "");
    fc.assert(
      fc.property(letters, fc.constantFrom(...bad), letters, (a, b, c) => {
        // Inside the name (trimming cannot remove it), after a digit (no mark composes with it).
        expect(parseOrReject({ name: `x${a}1${b}1${c}x`, roles: "ADMIN" })).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it("accepts every name of letters, digits and inner spaces up to 100 characters, normalized", () => {
    // Each word in one script (or Latin with Han): words mixing confusable scripts are refused (names.test.ts).
    const alphabets = [[..."aZéß17", "e\u0301"], [..."東京a7"], [..."Жж1"], [..."ωΩ1"], [..."٣ب"]];
    const word = fc.constantFrom(...alphabets).chain((units) => fc.array(fc.constantFrom(...units), { minLength: 1, maxLength: 8 }));
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 6 }), fc.constantFrom("", " ", "  \t"), (words, pad) => {
        const name = pad + words.map((w) => w.join("")).join(" ") + pad;
        expect(parseOrReject({ name, roles: "GUEST" })).toBe(true);
        expect(parseCreateInput({ name, roles: "GUEST" }).name).toBe(name.trim().normalize("NFC"));
      }),
      { numRuns: 500 },
    );
  });

  it("rejects fuzzed role and permission lists cleanly, echoing at most a short printable excerpt", () => {
    fc.assert(
      fc.property(hostileList, hostileList, (roles, permissions) => void parseOrReject({ name: "fuzz", roles, permissions })),
      { numRuns: 1_500 },
    );
  });

  it("rejects values of the wrong type with a message, never another exception", () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), fc.anything(), fc.anything(), (name, roles, permissions, description) =>
        void parseOrReject({ name, roles, permissions, description })),
      { numRuns: 1_000 },
    );
  });

  it("accepts __proto__ and constructor only as plain data, never touching prototypes", () => {
    const input = JSON.parse('{"name":"constructor","roles":"ADMIN","__proto__":{"polluted":true}}');
    expect(parseCreateInput(input)).toEqual({ name: "constructor", roles: ["ADMIN"], permissions: [] });
    expect(() => parseCreateInput({ name: "__proto__", roles: "ADMIN" })).toThrow(ServiceError);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("forged and truncated keys", () => {
  let store: KeyStore;
  let real: string;
  beforeAll(async () => {
    store = createKeyStore();
    real = (await store.create(parseCreateInput({ name: "real", roles: "ADMIN" }))).key;
  });
  afterAll(() => store.close());

  it("a real key verifies (so the checks below can fail)", async () => {
    expect((await store.verify(real))?.name).toBe("real");
  });

  it("every truncation and extension of a real key is rejected", async () => {
    for (let n = 0; n < real.length; n++) expect(await store.verify(real.slice(0, n))).toBeNull();
    for (const variant of [real + "A", real + " ", ` ${real}`, `${real}\n`, real.toUpperCase(), real.toLowerCase(), `Bearer ${real}`]) {
      expect(await store.verify(variant)).toBeNull();
    }
  });

  it("every one-character change of a real key is rejected", async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(real.length - 1), fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }), async (at, c) => {
        fc.pre(real[at] !== c);
        expect(await store.verify(real.slice(0, at) + c + real.slice(at + 1))).toBeNull();
      }),
      { numRuns: 500 },
    );
  });

  it("well-formed secrets that were never issued, and arbitrary strings, are rejected without throwing", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constant(null).map(() => generateSecret()),
          fc.string({ unit: "binary", maxLength: 80 }),
          fc.string({ maxLength: 60 }).map((s) => SECRET_PREFIX + s),
          fc.integer({ min: 1_000, max: 100_000 }).map((n) => SECRET_PREFIX + "A".repeat(n)),
        ),
        async (forged) => {
          expect(await store.verify(forged)).toBeNull();
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("non-string credentials are rejected without throwing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.anything(), async (value) => {
        expect(await store.verify(value as string)).toBeNull();
      }),
      { numRuns: 300 },
    );
  });
});

describe("the CLI under hostile names and flags", () => {
  let env: ReturnType<typeof cliWithStore>;
  beforeAll(() => (env = cliWithStore()));
  afterAll(() => env.cleanup());

  // argv cannot carry NUL, so the CLI sample draws from the rest.
  const sample = fc.sample(hostileName.filter((n) => !n.includes("\u0000") && !/^[\p{L}\p{N} ]+$/u.test(n.trim().normalize("NFC"))), {
    numRuns: 16,
    seed: 5,
  });
  const cases: string[][] = [
    ...sample.map((name) => ["--create", "--name", name, "--roles", "ADMIN"]),
    ["--create", "--name", "__proto__", "--roles", "ADMIN"],
    ["--create", "--name", "a; rm -rf / #", "--roles", "ADMIN"],
    ["--create", "--name", "../../etc/passwd", "--roles", "ADMIN"],
    ["--create", "--name", "\u202egnp.exe", "--roles", "ADMIN"],
    ["--create", "--name", "a".repeat(5_000), "--roles", "ADMIN"],
    ["--create", "--name", "ok", "--roles", "\u202eNIMDA"],
    ["--create", "--name", "ok", "--roles", "X".repeat(5_000)],
    ["--create", "--name", "ok", "--roles", generateSecret()],
    ["--create", "--name", "ok", "--permissions", `VMS:${generateSecret()}`],
    ["--create", "--name", "ok", "--permissions", "DOCKER:READ_ANY,\u001b[2J"],
    ["--create", "--name", "ok", "--roles", "ADMIN", "--description", "line\nbreak"],
    ["--create", "--name", "ok", "--roles", "ADMIN", "--__proto__", "x"],
    ["--create", "--name", "ok", "--roles", "ADMIN", "--constructor"],
    ["--delete", "--name", "../../etc/passwd"],
  ];

  it(`rejects ${cases.length} hostile invocations with exit 2, one line on stderr, no stack trace, nothing created`, async () => {
    for (let i = 0; i < cases.length; i += 4) {
      const results = await Promise.all(cases.slice(i, i + 4).map((args) => env.cli("apikey", ...args)));
      results.forEach((result, j) => {
        const label = JSON.stringify(cases[i + j]).slice(0, 120);
        expect(result.code, label).toBe(2);
        expect(result.stdout, label).toBe("");
        const lines = result.stderr.split("\n").filter(Boolean);
        expect(lines, label).toHaveLength(1);
        expect(lines[0], label).toMatch(/^Error: /);
        expect(lines[0].length, label).toBeLessThanOrEqual(520);
        expect(lines[0], label).not.toMatch(/[\p{Cc}\u202a-\u202e\u2066-\u2069]/u);
        expect(result.stderr, label).not.toMatch(/\n\s+at |TypeError|ReferenceError/);
        expect(result.stderr, label).not.toMatch(/sapi_[0-9a-z]{6}/i);
      });
    }
    const list = await env.cli("apikey", "--list", "--json");
    expect(JSON.parse(list.stdout)).toEqual({ keys: [] });
  }, 60_000);
});
