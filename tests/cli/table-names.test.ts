// Names in the tables at 80 columns: the name is what every command takes, so it is cut last and never
// below 12 columns while another column can give; and a key replaced with --overwrite --grace and its
// replacement say which is which, in --list, --audit and the interactive delete, on a real terminal (tmux).
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import type { ApiKeyInfo, AuditEvent } from "../../lib/core/model.ts";
import { formatAudit } from "../../lib/cli/audit-format.ts";
import { listTable } from "../../lib/cli/list.ts";
import { displayWidth } from "../../lib/cli/width.ts";
import { CLI, runCli, tempDir } from "../helpers/cli.ts";
import { hasTmux, quote } from "../helpers/tmux.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const used = (name: string, i: number): ApiKeyInfo => ({
  id: `${i}f0e4c2a-3b1d-4c5e-8f7a-9b0c1d2e3f4a`,
  name,
  roles: ["ADMIN", "VIEWER"],
  permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }],
  createdAt: "2026-11-01T10:00:00.000Z",
  lastUsedAt: "2026-11-25T09:59:00.000Z",
  expiresAt: "2027-01-01T00:00:00.000Z",
  description: "the key used by the nightly deploy job on host seven",
});

describe("at 80 columns with used keys", () => {
  test("--list shows names of up to 12 columns whole, and cuts longer ones no shorter than 12", () => {
    const keys = [used("deploy prod", 1), used("ci pipeline", 2), used("nightly backup of the billing db", 3)];
    const rows = listTable(keys, 80, Date.parse("2026-11-25T10:00:00Z")).trimEnd().split("\n");
    for (const row of rows) expect(displayWidth(row), row).toBeLessThanOrEqual(80);
    const names = rows.slice(1).map((row) => row.split(/ {2,}/)[0]);
    expect(names.slice(0, 2)).toEqual(["deploy prod", "ci pipeline"]);
    expect(displayWidth(names[2])).toBeGreaterThanOrEqual(12);
    expect(names[2]).toMatch(/^nightly back/);
    // The id and the description gave first.
    expect(rows[1]).toMatch(/ 1f0e4c…|1f0e4c2…/);
  });

  test("--audit keeps names whole as long as the id and the detail can give", () => {
    const events: AuditEvent[] = ["deploy production", "ci pipeline"].map((name, i) => ({
      at: "2026-11-25T09:59:00.000Z",
      action: "update",
      id: `${i}f0e4c2a-3b1d-4c5e-8f7a-9b0c1d2e3f4a`,
      name,
      actor: { kind: "local", user: "operations-team", host: "build-server-7" },
      changed: ["roles", "permissions", "description"],
    }));
    const out = formatAudit(events, false, { tty: true, columns: 80 }).stdout!.trimEnd().split("\n");
    for (const row of out) expect(displayWidth(row), row).toBeLessThanOrEqual(80);
    expect(out[1]).toContain("deploy production");
    expect(out[2]).toContain("ci pipeline");
  });
});

/** A tmux server of its own running one command at 80x24; resolves with the screen once `until` shows. */
async function onTerminal(args: string[], until: RegExp, keys: string[][] = []): Promise<string> {
  const socket = join(tmp.dir, `tmux-${Math.random().toString(36).slice(2, 8)}`);
  const tmux = (...a: string[]) => execFileSync("tmux", ["-S", socket, "-f", "/dev/null", ...a], { encoding: "utf8", timeout: 10_000 });
  tmux("new-session", "-d", "-s", "t", "-x", "80", "-y", "24",
    `env -u LOG_LEVEL -u COLUMNS -u SERVICE_API_STORE NO_COLOR=1 TERM=xterm ${quote(process.execPath)} ${[CLI, ...args].map(quote).join(" ")}; echo "[exit $?]"; sleep 600`);
  try {
    let screen = "";
    const wait = async (pattern: RegExp) => {
      for (const deadline = Date.now() + 15_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
        screen = tmux("capture-pane", "-p", "-t", "t");
        if (pattern.test(screen)) return;
      }
      throw new Error(`Timed out waiting for ${pattern}. Screen:\n${screen}`);
    };
    await wait(until);
    for (const sequence of keys) tmux("send-keys", "-t", "t", ...sequence);
    return screen;
  } finally {
    tmux("kill-server");
  }
}

describe.skipIf(!hasTmux && !process.env.CI)("a key and its grace-period twin on a terminal", { timeout: 90_000 }, () => {
  test("--list, --audit and the interactive delete mark the replaced key (old) and its replacement (new)", async () => {
    const store = join(tmp.dir, "twins");
    const first = await runCli(["apikey", "--create", "--name", "ci pipeline", "-r", "ADMIN", "--json", "--store", store]);
    const second = await runCli(["apikey", "--create", "--name", "ci pipeline", "-r", "VIEWER", "--overwrite", "--grace", "10m", "--json", "--store", store]);
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    const [oldId, newId] = [JSON.parse(first.stdout).id, JSON.parse(second.stdout).id].map((id: string) => id.slice(0, 6));

    const list = await onTerminal(["apikey", "--list", "--store", store], /\[exit 0\]/);
    expect(list).toMatch(new RegExp(`^ci pipeline \\(old\\) +${oldId}.*\\(grace\\)`, "m"));
    expect(list).toMatch(new RegExp(`^ci pipeline \\(new\\) +${newId}`, "m"));

    const audit = await onTerminal(["apikey", "--audit", "--store", store], /\[exit 0\]/);
    expect(audit).toMatch(new RegExp(`create +ci pipeline \\(old\\) +${oldId}`));
    expect(audit).toMatch(new RegExp(`overwrite +ci pipeline \\(new\\) +${newId}`));

    const remove = await onTerminal(["apikey", "--delete", "--store", store], /API keys to delete/, [["C-c"]]);
    expect(remove).toMatch(new RegExp(`ci pipeline \\(old\\) +${oldId}`));
    expect(remove).toMatch(new RegExp(`ci pipeline \\(new\\) +${newId}`));
  });
});

describe.skipIf(!hasTmux && !process.env.CI)("--list on an 80-column terminal", { timeout: 90_000 }, () => {
  test("keeps 'grafana dashboard' whole and every row within 80 columns, giving up empty columns and the times' minutes first", async () => {
    const store = join(tmp.dir, "grafana");
    for (const args of [
      ["--name", "grafana dashboard", "-p", "DOCKER:READ_ANY,VMS:UPDATE_OWN", "--expires-in", "1y", "--label", "team=ops"],
      ["--name", "ci", "-r", "VIEWER", "--expires-in", "30d"],
    ]) {
      const made = await runCli(["apikey", "--create", ...args, "--store", store]);
      expect(made.code, made.stderr).toBe(0);
    }
    const screen = await onTerminal(["apikey", "--list", "--store", store], /\[exit 0\]/);
    const rows = screen.split("\n").slice(0, 3);
    for (const row of rows) expect(displayWidth(row.trimEnd()), row).toBeLessThanOrEqual(80);
    expect(rows[0]).toMatch(/^NAME +ID +ROLES +PERMISSIONS +EXPIRES +LAST USED/);
    expect(rows[0]).not.toContain("DESCRIPTION"); // no key has one
    expect(rows[1]).toMatch(/^grafana dashboard  /);
  });
});
