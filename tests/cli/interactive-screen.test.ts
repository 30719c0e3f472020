// The delete list on a real 80x24 terminal (tmux) with more keys than fit: plain, NO_COLOR and
// TERM=linux. Captured screens are checked for wrapping (no row wider than the terminal, none
// wrapped), for where the cursor and selection marks are drawn, and for ASCII on a Linux console.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CLI, runCli, tempDir } from "../helpers/cli.ts";
import { displayWidth } from "../../lib/cli/width.ts";
import { hasTmux, quote } from "../helpers/tmux.ts";

const stripSgr = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "");
const tmp = tempDir();
const KEYS = Array.from({ length: 25 }, (_, i) => (i === 7 ? "鍵 番号 08" : `key number ${String(i + 1).padStart(2, "0")}`));

/** A tmux server of its own running one command at 80x24. */
function terminal(args: string[], env: Record<string, string | null>) {
  const socket = join(tmp.dir, `tmux-${Math.random().toString(36).slice(2, 8)}`);
  const tmux = (...a: string[]) => execFileSync("tmux", ["-S", socket, "-f", "/dev/null", ...a], { encoding: "utf8", timeout: 10_000 });
  const vars = { LOG_LEVEL: null, FORCE_COLOR: null, NO_COLOR: null, SERVICE_API_STORE: null, TERM: "xterm-256color", ...env };
  const entries = Object.entries(vars);
  const envArgs = [
    ...entries.filter(([, v]) => v === null).map(([k]) => `-u ${k}`),
    ...entries.filter(([, v]) => v !== null).map(([k, v]) => `${k}=${quote(v!)}`),
  ].join(" ");
  tmux("new-session", "-d", "-s", "t", "-x", "80", "-y", "24", `env ${envArgs} ${quote(process.execPath)} ${[CLI, ...args].map(quote).join(" ")}; echo "[exit $?]"; sleep 600`);
  const term = {
    /** Rows as drawn (`joined`: wrapped rows joined, so a wrapped row shows as one longer line). */
    screen: (joined = false, escapes = false) =>
      tmux("capture-pane", "-p", ...(joined ? ["-J"] : []), ...(escapes ? ["-e"] : []), "-t", "t").split("\n").map((l) => l.trimEnd()),
    keys: (...keys: string[]) => tmux("send-keys", "-t", "t", ...keys),
    async waitFor(pattern: RegExp): Promise<string> {
      const deadline = Date.now() + 15_000;
      let text = "";
      while (Date.now() < deadline) {
        text = stripSgr(term.screen(true, true).join("\n"));
        if (pattern.test(text)) return text;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`Timed out waiting for ${pattern}. Screen:\n${text}`);
    },
    kill: () => tmux("kill-server"),
  };
  return term;
}

// One after another: keys made in one millisecond are ordered by name in the delete list and by id on a
// pipe (docs/cli.md), and the test reads the delete list's order from `--list` on a pipe.
beforeAll(async () => {
  for (const [i, name] of KEYS.entries()) {
    const made = await runCli(["apikey", "--create", "--name", name, "--roles", "GUEST", "--store", join(tmp.dir, "seed"),
      "--description", `a description for ${name} that is far too long to fit in eighty columns beside its id ${i}`]);
    expect(made.code, made.stderr).toBe(0);
  }
}, 60_000);
afterAll(() => tmp.cleanup());

describe.skipIf(!hasTmux && !process.env.CI)("the delete list at 80x24 with 25 keys", { timeout: 90_000 }, () => {
  test.each([
    ["plain", { TERM: "xterm-256color" }],
    ["NO_COLOR", { NO_COLOR: "1" }],
    ["TERM=linux", { TERM: "linux" }],
  ] as [string, Record<string, string>][])("%s: rows fit, the list scrolls, the marks are beside the right keys", async (label, env) => {
    const store = join(tmp.dir, `store-${label.replace(/\W/g, "")}`);
    execFileSync("cp", ["-r", join(tmp.dir, "seed"), store]);
    const listed = (await runCli(["apikey", "--list", "--store", store])).stdout.trim().split("\n").map((row) => row.split("\t")[0]);
    const term = terminal(["apikey", "--delete", "--store", store], env);
    try {
      await term.waitFor(/API keys to delete/);
      const check = (cursorName: string, selected: string[]) => {
        const rows = term.screen(false, true);
        const joined = term.screen(true);
        expect(joined.length, "no row wrapped").toBe(rows.length);
        for (const row of rows.map(stripSgr)) expect(displayWidth(row), row).toBeLessThan(80);
        const text = rows.map(stripSgr);
        expect(text.filter((row) => row.trim() !== "").length).toBeLessThanOrEqual(23);
        const cursor = text.filter((row) => /^\S\s+>/.test(row));
        expect(cursor, "one cursor row").toHaveLength(1);
        expect(cursor[0]).toContain(cursorName);
        const on = label === "TERM=linux" ? "[x]" : "◼";
        expect(text.filter((row) => row.includes(on)).map((row) => KEYS.find((k) => row.includes(k))), text.join("\n")).toEqual(selected);
        expect(text.join("\n")).not.toContain("undefined");
        if (label === "TERM=linux") for (const row of text) expect(row.replace(/鍵 番号/g, ""), row).toMatch(/^[\x20-\x7e]*$/);
        const withEscapes = rows.join("\n");
        if (label === "NO_COLOR") expect(withEscapes).not.toMatch(/\x1b\[(3[0-7]|9[0-7])m/);
        if (label === "plain") expect(withEscapes).toMatch(/\x1b\[(3[0-7]|9[0-7])m/);
      };
      check(listed[0], []);
      term.keys(...Array(21).fill("Down")); // past the bottom of the screen: the list scrolls
      await term.waitFor(new RegExp(`>.*${listed[21]}`));
      term.keys("Space");
      await term.waitFor(/1 selected/);
      check(listed[21], [listed[21]]);
      term.keys(...Array(14).fill("Up"), "Space");
      await term.waitFor(/2 selected/);
      check(listed[7], [listed[7], listed[21]]);
      term.keys(...Array(6).fill("Up")); // past the top of the window: it scrolls back
      await term.waitFor(new RegExp(`>.*${listed[1]}`));
      check(listed[1], [listed[7]]); // the 22nd key is below the window now
      term.keys("Enter");
      await term.waitFor(new RegExp(`Delete 2 API keys \\('${listed[7]}', '${listed[21]}'\\)\\?`));
      term.keys("y");
      await term.waitFor(/\[exit 0\]/);
      const left = (await runCli(["apikey", "--list", "--store", store])).stdout.trim().split("\n").map((row) => row.split("\t")[0]);
      expect(left).toEqual(listed.filter((name) => name !== listed[7] && name !== listed[21]));
    } finally {
      term.kill();
    }
  });

  test("TERM=linux with NO_COLOR: the create prompts are plain ASCII, never 'undefined', the cursor row marked", async () => {
    const term = terminal(["apikey", "--create", "--store", join(tmp.dir, "create")], { TERM: "linux", NO_COLOR: "1" });
    try {
      await term.waitFor(/API key name/);
      term.keys("-l", "ascii key");
      term.keys("Enter");
      await term.waitFor(/Description/);
      term.keys("Enter");
      await term.waitFor(/VIEWER\s+Read-only access/);
      term.keys("Down", "Down", "Space");
      const screen = await term.waitFor(/\[x\] VIEWER/);
      expect(screen).not.toContain("undefined");
      for (const row of screen.split("\n")) expect(row, row).toMatch(/^[\x20-\x7e]*$/);
      expect(screen.split("\n").filter((row) => /^\S\s+>/.test(row))).toEqual([expect.stringMatching(/> \[x\] VIEWER/)]);
      term.keys("Enter");
      await term.waitFor(/None, the roles are enough/);
      term.keys("Enter");
      await term.waitFor(/\[exit 0\]/);
    } finally {
      term.kill();
    }
  });

  test("--list on the terminal is a table that fits 80 columns; COLUMNS overrides the width", async () => {
    const store = join(tmp.dir, "list");
    for (const name of ["鍵 番号 08", "release pipeline", "ci"]) {
      const made = await runCli(["apikey", "--create", "--name", name, "--permissions", "DOCKER:READ_ANY,VMS:READ_ANY", "--store", store,
        "--description", `what ${name} is for, in more words than eighty columns can hold beside the id`]);
      expect(made.code, made.stderr).toBe(0);
    }
    const term = terminal(["apikey", "--list", "--store", store], {});
    try {
      const screen = await term.waitFor(/\[exit 0\]/);
      const rows = term.screen().filter((row) => row !== "");
      expect(term.screen(true).length, "no row wrapped").toBe(term.screen().length);
      // At 80 columns CREATED gives way to EXPIRES and LAST USED; --list --json and the pipe keep it.
      expect(rows[0]).toMatch(/^NAME +ID +ROLES +PERMISSIONS +EXPIRES +LAST USED +DESCRIPTION$/);
      expect(rows.slice(1, 4).every((row) => row.endsWith("…"))).toBe(true);
      for (const row of rows) expect(displayWidth(row), row).toBeLessThanOrEqual(80);
      expect(screen).toMatch(/鍵 番号 08 +\S+/);
    } finally {
      term.kill();
    }
    const wide = terminal(["apikey", "--list", "--store", store], { COLUMNS: "200" });
    try {
      await wide.waitFor(/\[exit 0\]/);
      expect(wide.screen(true).some((row) => displayWidth(row) > 80 && /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.test(row))).toBe(true);
    } finally {
      wide.kill();
    }
  });
});
