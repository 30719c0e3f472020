// The shell examples in README.md, CONTRIBUTING.md and docs/*.md that show output are run, so the docs stay
// true. A fenced block opened with ```sh test is a terminal session:
//   $ command            run in bash (a line ending in `\` continues on the next one)
//   output lines         what the command prints, stdout and stderr together, as a terminal shows them
//   …                    inside a line: any text (a secret, an id, a time); a line of `…` alone: any lines
// Each block gets a fresh store (SERVICE_API_STORE=fs:<tmp>/keys), its own HOME and working directory, and
// the built CLI on PATH as `service-api`; the commands of a block share one bash, so variables carry over.
// Each block gets a free port too: PORT names it, and `3001` in the block is replaced by it. A command
// ending in `&` runs in the background: its first lines (as many as the block shows) are awaited, the rest
// ignored, and it is stopped with SIGTERM when the block ends.
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, ROOT, tempDir } from "../helpers/cli.ts";

interface Step { command: string; expected: string[] }
interface Block { file: string; line: number; steps: Step[] }

const FENCE = /^```(?:sh|bash|console) test\s*$/;

export function extractBlocks(file: string, text: string): Block[] {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!FENCE.test(lines[i])) continue;
    const block: Block = { file, line: i + 1, steps: [] };
    for (i++; i < lines.length && !lines[i].startsWith("```"); i++) {
      const line = lines[i];
      if (line.startsWith("$ ")) {
        let command = line.slice(2);
        while (command.endsWith("\\") && i + 1 < lines.length) command = `${command}\n${lines[++i]}`;
        block.steps.push({ command, expected: [] });
      } else if (block.steps.length > 0) {
        block.steps.at(-1)!.expected.push(line);
      } else if (line.trim() !== "") {
        throw new Error(`${file}:${i + 1}: a tested block starts with a \`$ \` command`);
      }
    }
    blocks.push(block);
  }
  return blocks;
}

/** Whether `actual` lines match `expected` ones: `…` is any text in a line, a line of `…` any lines. */
export function matches(expected: string[], actual: string[]): boolean {
  const patterns = expected.map((line) =>
    line === "…" ? null : new RegExp(`^${line.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`));
  const walk = (e: number, a: number): boolean => {
    if (e === patterns.length) return a === actual.length;
    const pattern = patterns[e];
    if (pattern === null) {
      for (let skip = a; skip <= actual.length; skip++) if (walk(e + 1, skip)) return true;
      return false;
    }
    return a < actual.length && pattern.test(actual[a]) && walk(e + 1, a + 1);
  };
  return walk(0, 0);
}

const trimEnd = (lines: string[]) => {
  const out = [...lines];
  while (out.length > 0 && out.at(-1)!.trim() === "") out.pop();
  return out.map((line) => line.trimEnd());
};

const MARK = "\u001eSTEP-END\u001e";

function script(block: Block, port: number): string {
  const out = ["set +e", "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT"];
  block.steps.forEach((step, n) => {
    const command = step.command.replaceAll("3001", String(port));
    const background = /&\s*$/.test(command) && !/&&\s*$/.test(command);
    if (background) {
      const log = `.job-${n}.log`, want = Math.max(1, trimEnd(step.expected).length);
      out.push(`${command.replace(/&\s*$/, "")} >${log} 2>&1 &`);
      out.push(`for _ in $(seq 200); do [ "$(wc -l <${log})" -ge ${want} ] && break; sleep 0.05; done; head -n ${want} ${log}`);
    } else {
      out.push(`{ ${command}\n} 2>&1 </dev/null`);
    }
    out.push(`printf '\\n${MARK}\\n'`);
  });
  return out.join("\n");
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const tmp = tempDir("service-api-docs-");
afterAll(() => tmp.cleanup());
const bin = join(tmp.dir, "bin");
mkdirSync(bin);
writeFileSync(join(bin, "service-api"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
chmodSync(join(bin, "service-api"), 0o755);

async function run(block: Block, index: number): Promise<string[][]> {
  const dir = join(tmp.dir, `block-${index}`);
  for (const sub of ["home", "work"]) mkdirSync(join(dir, sub), { recursive: true });
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(SERVICE_API_|LOG_|PORT$|HOST$|COLUMNS$)/.test(name)) env[name] = value;
  }
  Object.assign(env, {
    PATH: `${bin}:${process.env.PATH}`, HOME: join(dir, "home"), NO_COLOR: "1",
    SERVICE_API_STORE: `fs:${join(dir, "keys")}`, XDG_CONFIG_HOME: join(dir, "home", ".config"),
  });
  const port = await freePort();
  env.PORT = String(port); // a bare `service-api serve` listens there instead of on 3001
  const { stdout } = await promisify(execFile)("bash", ["-c", script(block, port)], {
    cwd: join(dir, "work"), env, timeout: 60_000, maxBuffer: 4 << 20,
  });
  return stdout.split(`\n${MARK}\n`).slice(0, block.steps.length).map((chunk) => trimEnd(chunk.split("\n")));
}

const FILES = ["README.md", "CONTRIBUTING.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const BLOCKS = FILES.flatMap((file) => extractBlocks(file, readFileSync(join(ROOT, file), "utf8")));

describe("the placeholder syntax", () => {
  it("… stands for any text in a line, and a line of … for any lines", () => {
    expect(matches(["id …, name x"], ["id 8758d5d2-f6cd, name x"])).toBe(true);
    expect(matches(["id …, name x"], ["id 8758d5d2-f6cd, name y"])).toBe(false);
    expect(matches(["a", "…", "z"], ["a", "b", "c", "z"])).toBe(true);
    expect(matches(["a", "…", "z"], ["a", "z"])).toBe(true);
    expect(matches(["a"], ["a", "b"])).toBe(false);
    expect(matches(["(1+1)"], ["(1+1)"])).toBe(true);
  });
});

describe("shell examples in the docs", () => {
  it("there are tested examples, and every block starts with a command", () => {
    expect(BLOCKS.length).toBeGreaterThanOrEqual(10);
    for (const block of BLOCKS) expect(block.steps.length, `${block.file}:${block.line}`).toBeGreaterThan(0);
  });

  it("every block that starts the service in the background waits for it to answer before calling it", () => {
    // `serve &` returns before the service listens; a reader copying the block has no harness waiting
    // for its lines, so the block itself must wait (a bare `curl -s` right after printed nothing).
    const wait = /^curl -fsS --retry \d+ --retry-delay 1 --retry-connrefused .*http:\/\/127\.0\.0\.1:3001\/healthz$/;
    for (const block of BLOCKS) {
      block.steps.forEach((step, n) => {
        if (!/^service-api serve\b.*&\s*$/.test(step.command)) return;
        expect(block.steps[n + 1]?.command ?? "", `${block.file}:${block.line}: the step after \`${step.command}\``).toMatch(wait);
      });
    }
  });

  it.each(BLOCKS.map((block, index) => [`${block.file}:${block.line}`, block, index] as const))(
    "%s prints what it shows",
    async (_where, block, index) => {
      const outputs = await run(block, index);
      block.steps.forEach((step, n) => {
        const expected = trimEnd(step.expected).map((line) => line.replaceAll("3001", "…"));
        const actual = outputs[n] ?? [];
        if (!matches(expected, actual)) expect(actual.join("\n"), `$ ${step.command}`).toBe(expected.join("\n"));
      });
    },
  );
});
