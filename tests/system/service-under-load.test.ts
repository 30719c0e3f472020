// The service under sustained authenticated load on loopback while the CLI, in other processes,
// creates, overwrites and deletes keys in the same store: no request fails with a 5xx or a dropped
// connection, steady keys keep working throughout, a new key works on the first request after its
// create returns, and a key revoked by the CLI (delete or overwrite) is 401 on the very first
// request sent after the CLI process has exited.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const LOAD_MS = 5_000;
const LOOPS = 8;

const tmp = tempDir();
const store = join(tmp.dir, "keys");
let server: ServerProcess;
const steady: string[] = [];

const cli = (...args: string[]) => runCli(["apikey", ...args, "--json", "--store", store]);

async function status(key: string): Promise<number> {
  const response = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: '{"query":"{ me { id } }"}',
    signal: AbortSignal.timeout(10_000),
  });
  await response.arrayBuffer();
  return response.status;
}

beforeAll(async () => {
  for (let i = 0; i < 4; i++) {
    const result = await cli("--create", "--name", `steady ${i}`, "--roles", "VIEWER");
    steady.push(JSON.parse(result.stdout).key);
  }
  // Revoked keys are refused hundreds of times a minute from one address here: without the throttle, so
  // that each refusal is the 401 of revocation (tests/http/auth-throttle.test.ts covers the 429).
  server = await startServer({ store, args: ["--auth-failure-limit", "off"] });
});
afterAll(async () => {
  await server?.stop("SIGKILL").catch(() => {});
  tmp.cleanup();
});

describe("the service under load while the CLI changes keys", () => {
  it(`${LOOPS} request loops for ${LOAD_MS / 1000} s: no 5xx, and CLI revocations are 401 on the next request`, async () => {
    const counts = new Map<string, number>();
    const bump = (what: string) => counts.set(what, (counts.get(what) ?? 0) + 1);
    const churning: string[] = []; // keys the CLI is creating and revoking; the load uses them too
    let running = true;

    const loop = async (n: number) => {
      for (let i = 0; running; i++) {
        const useChurn = churning.length > 0 && i % 4 === 0;
        const key = useChurn ? churning[(i + n) % churning.length] : steady[(i + n) % steady.length];
        try {
          const code = await status(key);
          bump(`${useChurn ? "churn" : "steady"} ${code}`);
        } catch (error) {
          bump(`network error: ${(error as Error).message}`);
        }
      }
    };

    const revocations: Array<{ how: string; oldKey: number; newKey?: number }> = [];
    const churn = async () => {
      for (let round = 0; running; round++) {
        const name = `churn ${round % 3}`;
        const created = await cli("--create", "--name", name, "--roles", "GUEST", "--overwrite");
        expect(created.code, created.stderr).toBe(0);
        const { key } = JSON.parse(created.stdout);
        churning.push(key);
        expect(await status(key), "a new key works on the first request after its create").toBe(200);

        if (round % 2 === 0) {
          const deleted = await cli("--delete", "--name", name);
          expect(deleted.code, deleted.stderr).toBe(0);
          revocations.push({ how: "delete", oldKey: await status(key) });
        } else {
          const replaced = await cli("--create", "--name", name, "--roles", "GUEST", "--overwrite");
          expect(replaced.code, replaced.stderr).toBe(0);
          const newKey = JSON.parse(replaced.stdout).key;
          revocations.push({ how: "overwrite", oldKey: await status(key), newKey: await status(newKey) });
          churning.push(newKey);
        }
        if (churning.length > 12) churning.splice(0, churning.length - 12);
      }
    };

    const started = Date.now();
    const stop = new Promise<void>((resolve) => setTimeout(() => ((running = false), resolve()), LOAD_MS));
    await Promise.all([stop, churn(), ...Array.from({ length: LOOPS }, (_, n) => loop(n))]);
    const seconds = (Date.now() - started) / 1000;

    const summary = Object.fromEntries([...counts].sort());
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    console.info(`service load: ${JSON.stringify({ requests: total, perSecond: Math.round(total / seconds), revocations: revocations.length, statuses: summary })}`);

    // Nothing failed on the server's side, and steady keys never flickered.
    for (const what of counts.keys()) {
      expect(what, JSON.stringify(summary)).toMatch(/^(steady 200|churn (200|401))$/);
    }
    expect(counts.get("steady 200") ?? 0).toBeGreaterThan(100); // the load really ran
    // Revocation is immediate: the first request after the CLI exits is refused.
    expect(revocations.length).toBeGreaterThanOrEqual(2);
    for (const r of revocations) {
      expect(r.oldKey, JSON.stringify(r)).toBe(401);
      if (r.how === "overwrite") expect(r.newKey, JSON.stringify(r)).toBe(200);
    }
    expect(server.stderr()).not.toMatch(/internal error/i);
  }, 40_000);
});
