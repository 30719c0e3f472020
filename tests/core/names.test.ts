// Names that are invisible or could pass for another key's name are refused on create and rename;
// lookups keep the basic rule (letters, digits, spaces) so every stored key can still be deleted.
import { afterAll, describe, expect, it } from "vitest";
import { LookupNameSchema, NameSchema, parseInput } from "../../lib/core/input.ts";
import { ServiceError } from "../../lib/core/errors.ts";
import { isPlainName, nameLookAlikeProblem, unicodeLookAlikeProblem } from "../../lib/core/_names.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { generateSecret } from "../../lib/core/secret.ts";
import { cliWithStore } from "../helpers/cli.ts";

const problem = (name: string): string | null => {
  try {
    parseInput(NameSchema, name);
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe("INVALID_INPUT");
    return (error as ServiceError).message;
  }
};

describe("new names", () => {
  it.each([
    ["\u3164"], ["deploy\u3164key"], ["\u115F"], ["\u1160x"], ["\uFFA0"],
  ])("refuses invisible or filler characters in %j", (name) => {
    expect(problem(name)).toMatch(/^API key name must not contain invisible or filler characters \(found U\+[0-9A-F]{4}\)$/);
  });

  it.each([
    ["d\u0435ploy key", "Latin and Cyrillic"], ["\u0440aypal", "Cyrillic and Latin"], ["ad\u03BCin", "Latin and Greek"],
    ["\u03B1\u0431", "Greek and Cyrillic"],
  ])("refuses %j, which mixes %s in one word", (name, mix) => {
    expect(problem(name)).toContain(`mixes ${mix}`);
  });

  it("refuses two spaces in a row, which pass for one", () => {
    expect(problem("deploy  key")).toBe("API key name must not contain two spaces in a row");
  });

  it("refuses full-width and other compatibility forms, naming the plain spelling", () => {
    expect(problem("\uFF44\uFF45\uFF50\uFF4C\uFF4F\uFF59 key")).toBe(
      'API key name must not contain full-width, ligature or other compatibility characters: write "deploy key"',
    );
    expect(problem("\uFB01le")).toContain('write "file"');
    expect(problem("\u{1D400}dmin")).toContain('write "Admin"'); // mathematical bold A

  });

  it.each([
    ["deploy key"], ["Überprüfung 東京 2"], ["Ключ 7"], ["مفتاح"], ["東京タワー key"], ["漢字ひらがなカタカナ Latin"],
    ["한국어 키"], ["Deploy key"], ["deploy Ключ"], ["ελληνικά 2"]
  ])("accepts %j", (name) => {
    expect(problem(name)).toBeNull();
  });

  it.each([
    ["परीक्षण कुंजी"], ["தமிழ்"], ["हिन्दी 2"], ["ক্ষমা"], ["ಕನ್ನಡ"], ["ไทย"], ["מַפְתֵּחַ"],
  ])("accepts %j, whose script needs combining marks", (name) => {
    expect(problem(name)).toBeNull();
  });

  it.each([
    ["deplo\u0336y"], ["\u0336"], ["a\u0301\u0301"], ["\u093F\u0915"], ["2\u093F"], ["x \u0BCD"], ["de\u20DDploy"], ["\u043A\u0489\u043B\u044E\u0447"],
  ])("keeps the reference message for %j: a mark of no script, or with no letter before it", (name) => {
    expect(problem(name)).toBe(
      "API key name must contain only letters, numbers, and spaces (Unicode letters are supported)",
    );
  });

  it.each([
    ["deplo\u093Fy", "Latin and Devanagari"], ["\u0915\u0BCD", "Devanagari and Tamil"],
  ])("refuses %j, a letter with another script's mark (%s)", (name, mix) => {
    expect(problem(name)).toContain(`mixes ${mix}`);
  });

  it("refuses a mark repeated or piled up, which draws over itself", () => {
    expect(problem("\u0915\u0941\u0941")).toMatch(/combining marks/);
    expect(problem("\u0915\u093C\u0941\u0902\u0901\u0903")).toMatch(/combining marks/);
  });

  it("refuses a secret's body (without its sapi_ prefix) as a name: it would be stored in clear and listed", () => {
    const body = generateSecret().slice("sapi_".length);
    expect(problem(body)).toBe("API key name must not contain an API key secret: it would be stored in clear");
    expect(problem(`ci ${body} old`)).toBe("API key name must not contain an API key secret: it would be stored in clear");
    expect(problem("ci key 2024")).toBeNull();
  });

  it("keeps the reference message for characters that are not letters, digits or spaces, and says what would pass", () => {
    expect(problem("bad-name")).toBe(
      'API key name must contain only letters, numbers, and spaces (Unicode letters are supported). Try "bad name"',
    );
  });

  it("lookups accept old names the new rules refuse, so such keys can still be found", () => {
    expect(parseInput(LookupNameSchema, " \u3164 ")).toBe("\u3164");
  });
});

describe("the CLI and the library", () => {
  const { cli, cleanup } = cliWithStore();
  afterAll(cleanup);

  it("refuses a Hangul-filler name with exit 2 and the message, and stores nothing", async () => {
    const result = await cli("apikey", "--create", "--name", "\u3164", "--roles", "ADMIN", "--json");
    expect(result.code).toBe(2);
    expect(result.stderr + result.stdout).toContain("invisible or filler characters (found U+3164)");
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const list = await cli("apikey", "--list", "--json");
    expect(JSON.parse(list.stdout)).toEqual({ keys: [] });
  });

  it("refuses a look-alike of an existing key's name instead of creating a second key", async () => {
    expect((await cli("apikey", "--create", "--name", "deploy key", "--roles", "ADMIN")).code).toBe(0);
    const spoof = await cli("apikey", "--create", "--name", "d\u0435ploy key", "--roles", "ADMIN");
    expect(spoof.code).toBe(2);
    expect(spoof.stderr).toContain("mixes Latin and Cyrillic");
    const wide = await cli("apikey", "--create", "--name", "\uFF44\uFF45\uFF50\uFF4C\uFF4F\uFF59 key", "--roles", "ADMIN");
    expect(wide.code).toBe(2);
    expect(wide.stderr).toContain('write "deploy key"');
  });

  it("creates a Devanagari-named key from the CLI and deletes it by that name", async () => {
    const created = await cli("apikey", "--create", "--name", "परीक्षण कुंजी", "--roles", "GUEST", "--json");
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout).name).toBe("परीक्षण कुंजी");
    expect((await cli("apikey", "--delete", "--name", "परीक्षण कुंजी")).code).toBe(0);
  });

  it("refuses a secret's body as a name from the CLI with exit 2, and stores nothing", async () => {
    const body = generateSecret().slice("sapi_".length);
    const result = await cli("apikey", "--create", "--name", body, "--roles", "GUEST", "--json");
    expect(result.code).toBe(2);
    expect(result.stdout + result.stderr).not.toContain(body);
    const list = await cli("apikey", "--list", "--json");
    expect(list.stdout).not.toContain(body);
  });

  it("the store refuses a rename to an invisible name too", async () => {
    const store = createKeyStore();
    const { id } = await store.create({ name: "ok", roles: ["GUEST"], permissions: [] });
    await expect(store.update(id, { name: "a\u3164b" })).rejects.toThrow(/invisible or filler/);
    expect((await store.get(id))?.name).toBe("ok");
  });
});

describe("plain ASCII names take a short path with the same verdicts", () => {
  // Names of ASCII letters, digits and spaces (most names) skip the Unicode property patterns, whose
  // building costs a CLI start a few milliseconds. Every such name must get what the full rules say.
  const alphabet = "abcXYZ019  ";
  const names = new Set<string>(["a", "deploy key", "deploy  key", " x", "x ", "A1 B2 C3", "9"]);
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  while (names.size < 500) {
    const length = 1 + Math.floor(random() * 12);
    names.add(Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join(""));
  }

  it("nameLookAlikeProblem agrees with the Unicode rules on every plain name", () => {
    for (const name of names) {
      expect(isPlainName(name)).toBe(true);
      expect(nameLookAlikeProblem(name)).toBe(unicodeLookAlikeProblem(name));
    }
    expect(nameLookAlikeProblem("deploy  key")).toMatch(/two spaces/);
  });

  it("a name with anything else takes the Unicode rules", () => {
    for (const name of ["dеploy", "deploy-key", "ｄｅｐｌｏｙ", "a\u200bb", "é"]) {
      expect(isPlainName(name)).toBe(false);
      expect(nameLookAlikeProblem(name)).toBe(unicodeLookAlikeProblem(name));
    }
  });
});
