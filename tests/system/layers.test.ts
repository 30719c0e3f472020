// The house rule of lib/: folders are layers and imports point down only, and no module imports
// itself back through a cycle. A new upward import fails here with the offending pair named.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/cli.ts";

/** Layer of each folder of lib/, lowest first. A file may import its own layer or a lower one. */
const LAYERS: Record<string, number> = { core: 0, store: 1, graphql: 2, http: 3, client: 3, cli: 4 };
/** Siblings at one rank that must not know each other. */
const APART = [["http", "client"]];

const LIB = join(ROOT, "lib");
const files = readdirSync(LIB, { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".ts"))
  .map((f) => join(LIB, f));

/** Relative imports of a file, static and dynamic, type-only included, resolved to absolute paths. */
function importsOf(file: string, text = readFileSync(file, "utf8")): string[] {
  const found = [...text.matchAll(/(?:from|import\(?)\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]);
  return found.map((spec) => resolve(dirname(file), spec));
}

const layerOf = (file: string): string => relative(LIB, file).split("/")[0];

describe("lib/ layers", () => {
  it("every file lives in a layer folder", () => {
    const stray = files.filter((f) => !(layerOf(f) in LAYERS)).map((f) => relative(ROOT, f));
    expect(stray).toEqual([]);
  });

  it("imports point down only", () => {
    const upward: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      for (const target of importsOf(file)) {
        if (!target.startsWith(LIB + "/")) {
          upward.push(`${relative(ROOT, file)} -> ${relative(ROOT, target)} (outside lib/)`);
          continue;
        }
        const to = layerOf(target);
        const apart = APART.some((pair) => pair.includes(from) && pair.includes(to) && from !== to);
        if (LAYERS[to] > LAYERS[from] || apart) upward.push(`${relative(ROOT, file)} -> ${relative(ROOT, target)}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("no import cycles", () => {
    const graph = new Map(files.map((f) => [f, importsOf(f)]));
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        cycles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(LIB, f)).join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, "done");
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it("the import reader sees every form of import, so the checks above cannot pass vacuously", () => {
    const file = join(LIB, "store/example.ts");
    const text = [
      `import { a } from "../core/errors.ts";`,
      `import type { B } from "../http/types.ts";`,
      `export { c } from "./atomic.ts";`,
      `const d = await import("../cli/prompts.ts");`,
      `import "./side-effect.ts";`,
    ].join("\n");
    expect(importsOf(file, text).map((f) => relative(LIB, f))).toEqual([
      "core/errors.ts",
      "http/types.ts",
      "store/atomic.ts",
      "cli/prompts.ts",
      "store/side-effect.ts",
    ]);
    expect(files.length).toBeGreaterThan(30);
  });
});
