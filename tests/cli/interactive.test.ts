// The built CLI at a real terminal: a tmux pseudo-terminal per test (own server socket, so tests can
// run in parallel), driven by keystrokes, read back with capture-pane. Every wait has a deadline.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { CLI, runCli, tempDir } from "../helpers/cli.ts";
import { hasTmux, quote } from "../helpers/tmux.ts";


/**
 * One tmux server and session running one command in a 100x30 pseudo-terminal. The server's socket
 * lives in the test's temp directory: its own server per test, removed with the directory.
 */
class Terminal {
  readonly socket: string;

  constructor(dir: string) {
    this.socket = join(dir, `tmux-${Math.random().toString(36).slice(2, 8)}`);
  }

  tmux(...args: string[]): string {
    return execFileSync("tmux", ["-S", this.socket, "-f", "/dev/null", ...args], { encoding: "utf8", timeout: 10_000 });
  }

  /**
   * Starts `node dist/cli.cjs ...args` with the given environment. When it ends, the pane shows
   * `[exit <status> tty <same|changed>]`: whether the terminal modes (raw mode, echo) were restored.
   */
  start(args: string[], env: Record<string, string | null> = {}, redirect = ""): void {
    const vars = { LOG_LEVEL: null, FORCE_COLOR: null, NO_COLOR: "1", SERVICE_API_STORE: null, ...env };
    // env takes its -u options before the assignments.
    const entries = Object.entries(vars);
    const envArgs = [
      ...entries.filter(([, v]) => v === null).map(([k]) => `-u ${k}`),
      ...entries.filter(([, v]) => v !== null).map(([k, v]) => `${k}=${quote(v!)}`),
    ].join(" ");
    const run = `env ${envArgs} ${quote(process.execPath)} ${[CLI, ...args].map(quote).join(" ")}${redirect}`;
    const script = `before=$(stty -g); ${run}; code=$?; after=$(stty -g); ` +
      `if [ "$before" = "$after" ]; then t=same; else t=changed; fi; echo "[exit $code tty $t]"; sleep 600`;
    this.tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", script);
  }

  /** The visible screen as text, wrapped lines joined (`escapes`: with colour and attribute sequences). */
  screen(escapes = false): string {
    const text = this.tmux("capture-pane", "-p", "-J", ...(escapes ? ["-e"] : []), "-t", "t");
    return text.split("\n").map((line) => line.trimEnd()).join("\n");
  }

  /** Polls the screen until it matches, or fails after a deadline showing what was there. */
  async waitFor(pattern: RegExp, timeoutMs = 15_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let screen = "";
    while (Date.now() < deadline) {
      screen = this.screen();
      if (pattern.test(screen)) return screen;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`Timed out after ${timeoutMs} ms waiting for ${pattern}. Screen:\n${screen}`);
  }

  /** Waits for the command to end and returns its exit status. */
  async exit(): Promise<number> {
    const screen = await this.waitFor(/\[exit \d+ tty \w+\]/);
    const [, code, tty] = screen.match(/\[exit (\d+) tty (\w+)\]/)!;
    expect(tty, "terminal modes restored after the command").toBe("same");
    expect(this.tmux("display-message", "-p", "-t", "t", "#{cursor_flag}").trim(), "cursor visible").toBe("1");
    return Number(code);
  }

  keys(...keys: string[]): void {
    this.tmux("send-keys", "-t", "t", ...keys);
  }

  type(text: string): void {
    this.tmux("send-keys", "-t", "t", "-l", text);
  }

  kill(): void {
    try {
      this.tmux("kill-server");
    } catch {
      // already gone
    }
  }
}

// Generous time limits: each wait is bounded, but a busy CI machine can be slow to start node.
describe.skipIf(!hasTmux && !process.env.CI)("interactive mode at a real terminal (tmux)", { timeout: 60_000 }, () => {
  let term: Terminal;
  let dir: string;
  let store: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
    store = join(dir, "keys");
    term = new Terminal(dir);
  });

  afterEach(() => {
    term.kill();
    cleanup();
  });

  const list = async () => {
    const result = await runCli(["apikey", "--list", "--json", "--store", store]);
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout).keys as { id: string; name: string; roles: string[]; description?: string }[];
  };
  const createKey = async (name: string) => {
    const result = await runCli(["apikey", "--create", "--name", name, "--roles", "GUEST", "--description", `about ${name}`, "--store", store]);
    expect(result.code, result.stderr).toBe(0);
  };

  test("create: answers to the prompts make a key, and the secret is printed", async () => {
    term.start(["apikey", "--create", "--store", store]);
    await term.waitFor(/API key name \(letters, numbers and spaces\):/);
    term.type("deploy-key");
    term.keys("Enter");
    await term.waitFor(/must contain only letters, numbers, and spaces/);
    term.type("deploy key");
    term.keys("Enter");
    await term.waitFor(/Description \(optional/);
    term.type("for the CI pipeline");
    term.keys("Enter");
    await term.waitFor(/VIEWER\s+Read-only access/);
    term.keys("Down", "Down", "Space", "Enter"); // VIEWER
    await term.waitFor(/None, the roles are enough/);
    term.keys("Enter");
    expect(await term.exit()).toBe(0);
    const screen = term.screen();
    expect(screen).toMatch(/^sapi_\w+$/m);
    expect(screen).toMatch(/Created API key 'deploy key'/);
    const keys = await list();
    expect(keys).toMatchObject([{ name: "deploy key", description: "for the CI pipeline", roles: ["VIEWER"] }]);
  });

  test("create: permissions picked from the resource and action lists", async () => {
    // A flag given (--description) is not asked for.
    term.start(["apikey", "--create", "--json", "--store", store, "--description", "from a flag"]);
    await term.waitFor(/API key name/);
    term.type("picker");
    term.keys("Enter");
    await term.waitFor(/Roles \(/);
    expect(term.screen()).not.toMatch(/Description/);
    term.keys("Enter"); // no role
    await term.waitFor(/Choose resources, then actions/);
    term.keys("Enter"); // with no role, "choose resources" is preselected
    await term.waitFor(/Resources \(/);
    // DOCKER is the 12th resource: move there and select it.
    term.keys(...Array(11).fill("Down"), "Space", "Enter");
    await term.waitFor(/Actions on DOCKER/);
    term.keys("Down", "Down", "Space", "Enter"); // READ_ANY
    expect(await term.exit()).toBe(0);
    const json = term.screen().match(/^\{"key":.*\}$/m);
    expect(json, term.screen()).not.toBeNull();
    expect(JSON.parse(json![0])).toMatchObject({ name: "picker" });
    const keys = await list();
    expect(keys).toMatchObject([{ name: "picker", description: "from a flag", roles: [], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] }]);
  });

  test("delete: selecting one of two keys deletes just that one", async () => {
    await createKey("alpha");
    await createKey("beta");
    const [alpha, beta] = await list();
    term.start(["apikey", "--delete", "--store", store]);
    await term.waitFor(new RegExp(`beta\\s+${beta.id}.*about beta`));
    term.keys("Down", "Space", "Enter");
    await term.waitFor(/Delete 1 API key \('beta'\)\?.*\n.*Yes \/ . No/);
    term.keys("y");
    expect(await term.exit()).toBe(0);
    expect(term.screen()).toMatch(/^Successfully deleted 1 API key$/m);
    expect((await list()).map((k) => k.id)).toEqual([alpha.id]);
  });

  test("Ctrl-C at a prompt exits 130, writes nothing and leaves the terminal clean", async () => {
    await createKey("existing");
    const before = await list();
    term.start(["apikey", "--create", "--store", store]);
    await term.waitFor(/API key name/);
    term.type("new key");
    term.keys("Enter");
    await term.waitFor(/Description/);
    term.keys("C-c");
    expect(await term.exit()).toBe(130);
    expect(term.screen()).toMatch(/Cancelled; nothing was changed/);
    expect(await list()).toEqual(before);
  });

  test("Ctrl-D (end of input) at the first prompt cancels: exit 130 and one JSON object with code CANCELLED", async () => {
    term.start(["apikey", "--create", "--json", "--store", store]);
    await term.waitFor(/API key name/);
    term.keys("C-d");
    expect(await term.exit()).toBe(130);
    expect(term.screen()).toMatch(/\{"error":"Cancelled; nothing was changed","code":"CANCELLED"\}/);
    expect(await list()).toEqual([]);
  });

  test("Ctrl-D at a later create prompt and at the delete confirmation cancels with 130, nothing changed", async () => {
    term.start(["apikey", "--create", "--store", store]);
    await term.waitFor(/API key name/);
    term.type("new key");
    term.keys("Enter");
    await term.waitFor(/Description/);
    term.keys("Enter");
    await term.waitFor(/VIEWER\s+Read-only access/);
    term.keys("C-d");
    expect(await term.exit()).toBe(130);
    expect(term.screen()).toMatch(/Cancelled; nothing was changed/);
    expect(await list()).toEqual([]);
    term.kill();

    await createKey("keep me");
    const before = await list();
    term = new Terminal(dir);
    term.start(["apikey", "--delete", "--store", store]);
    await term.waitFor(/keep me/);
    term.keys("Space", "Enter");
    await term.waitFor(/Delete 1 API key/);
    term.keys("C-d");
    expect(await term.exit()).toBe(130);
    expect(await list()).toEqual(before);
  });

  test("Esc at the delete confirmation exits 130 and deletes nothing", async () => {
    await createKey("keep me");
    const before = await list();
    term.start(["apikey", "--delete", "--store", store]);
    await term.waitFor(/keep me/);
    term.keys("Space", "Enter");
    await term.waitFor(/Delete 1 API key/);
    term.keys("Escape");
    expect(await term.exit()).toBe(130);
    expect(await list()).toEqual(before);
  });

  test("NO_COLOR turns colour off; without it the prompts are coloured", async () => {
    term.start(["apikey", "--create", "--store", store], { NO_COLOR: "1" });
    await term.waitFor(/API key name/);
    // SGR colour sequences: 3x foreground, 9x bright foreground.
    expect(term.screen(true)).not.toMatch(/\x1b\[(3[0-7]|9[0-7])m/);
    term.keys("C-c");
    expect(await term.exit()).toBe(130);
    term.kill();

    const coloured = new Terminal(dir);
    term = coloured;
    coloured.start(["apikey", "--create", "--store", store], { NO_COLOR: null });
    await coloured.waitFor(/API key name/);
    expect(coloured.screen(true)).toMatch(/\x1b\[(3[0-7]|9[0-7])m/);
    coloured.keys("C-c");
    expect(await coloured.exit()).toBe(130);
  });

  test("stdout not a terminal: no prompt, exit 2 naming the flags to pass", async () => {
    const out = join(dir, "out.txt");
    term.start(["apikey", "--create", "--store", store], {}, ` > ${quote(out)}`);
    expect(await term.exit()).toBe(2);
    const screen = term.screen();
    expect(screen).not.toMatch(/API key name \(/);
    expect(screen).toMatch(/stdout is not a terminal/);
    expect(screen).toMatch(/--name <name>/);
  });
});

describe("interactive mode without a terminal", () => {
  test.each([
    [["--create"], /--name <name> and --roles <roles> or --permissions/],
    [["--delete"], /Pass --name <name>/],
  ])("apikey %j with stdin not a terminal never prompts: exit 2 naming the flags", async (flags, message) => {
    const { dir, cleanup } = tempDir();
    try {
      const started = Date.now();
      const result = await runCli(["apikey", ...flags, "--store", join(dir, "keys")], { timeoutMs: 10_000 });
      expect(result.code).toBe(2);
      expect(result.signal).toBeNull();
      expect(result.stderr).toMatch(/stdin is not a terminal/);
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe("");
      expect(Date.now() - started).toBeLessThan(10_000);

      const json = await runCli(["apikey", ...flags, "--json", "--store", join(dir, "keys")]);
      expect(json.code).toBe(2);
      expect(JSON.parse(json.stdout)).toMatchObject({ code: "USAGE", error: expect.stringMatching(message) });
    } finally {
      cleanup();
    }
  });
});
