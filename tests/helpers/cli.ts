// Runs the built CLI as a child process over a store the test owns: the way a user or a script does.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach } from "vitest";

export const ROOT = resolve(import.meta.dirname, "../..");
export const CLI = join(ROOT, "dist/cli.cjs");

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed (stdin is never a terminal here). */
  input?: string;
  timeoutMs?: number;
  /** A command prefix to run the CLI through, like `AS_NOBODY` (tests/helpers/users.ts). */
  as?: string[];
}

/** Runs `node dist/cli.cjs ...args` and resolves with its exit status and output. */
export function runCli(args: string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const [command, ...prefix] = [...(options.as ?? []), process.execPath];
    const child = spawn(command, [...prefix, CLI, ...args], {
      env: { ...process.env, LOG_LEVEL: undefined, NO_COLOR: "1", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
      timeout: options.timeoutMs ?? 20_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = "service-api-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A CLI bound to one fresh fs store: `cli("apikey", "--list")`. */
export function cliWithStore(): { store: string; cli: (...args: string[]) => Promise<RunResult>; cleanup: () => void } {
  const { dir, cleanup } = tempDir();
  const store = join(dir, "keys");
  return { store, cli: (...args) => runCli([...args, "--store", store]), cleanup };
}

/** `cliWithStore` for each call, every store removed after the test it was made in (call once per file or describe). */
export function freshStores(): () => ReturnType<typeof cliWithStore> {
  const stores: (() => void)[] = [];
  afterEach(() => stores.splice(0).forEach((cleanup) => cleanup()));
  return () => {
    const made = cliWithStore();
    stores.push(made.cleanup);
    return made;
  };
}
