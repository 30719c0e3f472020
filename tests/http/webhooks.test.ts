// Webhooks end to end: endpoints added with the real CLI, a real `serve` delivering, and a receiver that
// verifies every signature with the Standard Webhooks reference library (`standardwebhooks`).
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { startServer } from "../helpers/server.ts";
import { startReceiver } from "../helpers/webhook-receiver.ts";

let cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const clean of cleanups.reverse()) await clean();
  cleanups = [];
});

async function setUp(...addFlags: string[]) {
  const tmp = tempDir();
  const store = join(tmp.dir, "keys");
  const receiver = await startReceiver();
  cleanups.push(tmp.cleanup, () => receiver.close());
  const cli = (...args: string[]) => runCli([...args, "--store", store]);
  const added = await cli("webhook", "--add", "--url", receiver.url, ...addFlags, "--json");
  expect(added.code, added.stderr).toBe(0);
  const endpoint = JSON.parse(added.stdout) as { id: string; secret: string; url: string };
  receiver.secret = endpoint.secret;
  const serve = async () => {
    const server = await startServer({ store });
    cleanups.push(() => server.stop("SIGKILL").catch(() => {}));
    return server;
  };
  return { store, cli, receiver, endpoint, serve };
}

/** /metrics once it matches every pattern (the worker counts after each attempt and pass), or the last text read. */
async function metricsMatching(url: string, ...patterns: RegExp[]): Promise<string> {
  let text = "";
  for (const until = Date.now() + 20_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
    text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
    if (patterns.every((p) => p.test(text))) break;
  }
  return text;
}

const createKeyWith = async (cli: (...a: string[]) => Promise<{ code: number | null; stdout: string; stderr: string }>, name: string, role: string) => {
  const made = await cli("apikey", "--create", "--name", name, "--roles", role);
  expect(made.code, made.stderr).toBe(0);
  return made.stdout.trim();
};

const createKey = async (cli: (...a: string[]) => Promise<{ code: number | null; stdout: string; stderr: string }>, name: string) => {
  const made = await cli("apikey", "--create", "--name", name, "--roles", "VIEWER", "--json");
  expect(made.code, made.stderr).toBe(0);
  return JSON.parse(made.stdout) as { key: string; id: string };
};

describe("webhooks", () => {
  it("add prints a whsec_ signing secret once; list never shows it, and the store keeps it sealed", async () => {
    const { cli, endpoint, store } = await setUp("--events", "key.created,key.deleted", "--description", "audit sink");
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const listed = await cli("webhook", "--list", "--json");
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id: endpoint.id, events: ["key.created", "key.deleted"], description: "audit sink" })]);
    expect(listed.stdout).not.toContain("whsec_");
    const { readFileSync } = await import("node:fs");
    expect(readFileSync(join(store, "webhooks", endpoint.id), "utf8")).not.toContain(endpoint.secret.slice(6, 30));
  });

  it("a key created and deleted with the CLI reaches the receiver as key.created then key.deleted, signed", async () => {
    const { cli, receiver, endpoint, serve } = await setUp();
    await serve();
    const key = await createKey(cli, "hooked");
    expect((await cli("apikey", "--delete", "--name", "hooked")).code).toBe(0);
    await receiver.waitFor(() => receiver.delivered().length >= 2, "two events");
    const got = receiver.delivered();
    expect(got.map((r) => r.type)).toEqual(["key.created", "key.deleted"]);
    expect(got.every((r) => r.verified)).toBe(true);
    expect(got[0].data).toMatchObject({ id: key.id, name: "hooked" });
    expect(got.some((r) => r.body.includes(key.key) || r.body.includes("sapi_"))).toBe(false);
    const deliveries = await cli("webhook", "--deliveries", endpoint.id, "--json");
    expect(JSON.parse(deliveries.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ type: "key.created", ok: true, status: 204 })]));
  }, 60_000);

  it("a key expiring within --notify-before is told of once as key.expiring", async () => {
    const { cli, receiver, serve } = await setUp("--notify-before", "3d", "--events", "key.expiring");
    expect((await cli("apikey", "--create", "--name", "short lived", "--roles", "VIEWER", "--expires-in", "2d")).code).toBe(0);
    expect((await cli("apikey", "--create", "--name", "long lived", "--roles", "VIEWER", "--expires-in", "30d")).code).toBe(0);
    await serve();
    await receiver.waitFor(() => receiver.delivered().length >= 1, "key.expiring");
    expect(receiver.requests).toEqual([expect.objectContaining({ type: "key.expiring", verified: true, data: expect.objectContaining({ name: "short lived" }) })]);
  }, 60_000);

  it("an endpoint gets only the event types it asked for; a key revoked by --scan --revoke is key.leaked", async () => {
    const { cli, receiver, serve, store } = await setUp("--events", "key.deleted,key.leaked");
    await serve();
    await createKey(cli, "first");
    expect((await cli("apikey", "--delete", "--name", "first")).code).toBe(0);
    const leaked = await createKey(cli, "second");
    const { writeFileSync } = await import("node:fs");
    const file = join(store, "..", "config.env");
    writeFileSync(file, `TOKEN=${leaked.key}\n`);
    expect((await cli("apikey", "--scan", file, "--revoke")).code).toBe(1);
    await receiver.waitFor(() => receiver.delivered().length >= 2, "the delete and the leak");
    expect(receiver.requests.map((r) => r.type)).toEqual(["key.deleted", "key.leaked"]);
    expect(receiver.requests[1].data).toMatchObject({ id: leaked.id, name: "second", reason: expect.stringContaining("config.env") });
  }, 60_000);

  it("while the receiver fails, events wait and are retried with the same webhook-id; once it answers, all arrive in order", async () => {
    const { cli, receiver, serve } = await setUp();
    receiver.mode = 503;
    const server = await serve();
    for (const name of ["one", "two", "three"]) await createKey(cli, name);
    await receiver.waitFor(() => receiver.requests.length >= 1, "a first, failing attempt");
    const firstId = receiver.requests[0].id;
    receiver.mode = 204;
    await receiver.waitFor(() => receiver.delivered().length >= 3, "all three events", 45_000);
    const got = receiver.delivered();
    expect(got.map((r) => r.data.name)).toEqual(["one", "two", "three"]);
    expect(got[0].id).toBe(firstId);
    expect(new Set(got.map((r) => r.id)).size).toBe(3);
    const delivered = /^service_api_webhook_deliveries_total\{result="delivered"\} 3$/m;
    const none = /^service_api_webhook_backlog 0$/m;
    const after = await metricsMatching(server.url, delivered, none);
    expect(after).toMatch(delivered);
    expect(after).toMatch(none);
  }, 60_000);

  it("seen from outside while the receiver fails: doctor names the backlog and the last failure, /metrics counts them", async () => {
    const { cli, receiver, serve } = await setUp();
    receiver.mode = 503; // throughout: the checks below take their time, and the next retry must not succeed meanwhile
    const server = await serve();
    for (const name of ["one", "two", "three"]) await createKey(cli, name);
    await receiver.waitFor(() => receiver.requests.length >= 1, "a first, failing attempt");
    const doctor = await cli("doctor", "--json");
    const line = JSON.parse(doctor.stdout).checks.find((c: { name: string }) => c.name === "webhooks");
    expect(line).toMatchObject({ ok: true, detail: expect.stringMatching(/^1 endpoint; backlog 3; last failure .*answered 503/) });
    const failed = /^service_api_webhook_deliveries_total\{result="failed"\} [1-9]/m;
    const waiting = /^service_api_webhook_backlog 3$/m;
    const failing = await metricsMatching(server.url, failed, waiting);
    expect(failing).toMatch(failed);
    expect(failing).toMatch(waiting);
  }, 60_000);

  it("--test sends a signed webhook.test and prints the receiver's answer", async () => {
    const { cli, receiver, endpoint } = await setUp();
    const sent = await cli("webhook", "--test", endpoint.id);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/answered 204/);
    expect(receiver.requests).toEqual([expect.objectContaining({ type: "webhook.test", verified: true })]);
    receiver.mode = 500;
    const failed = await cli("webhook", "--test", endpoint.id, "--json");
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ delivered: false, status: 500 });
  });

  it("--rotate-secret prints a new secret once; both sign during the grace period, only the new one after --grace 0", async () => {
    const { cli, receiver, endpoint } = await setUp();
    const rotated = await cli("webhook", "--rotate-secret", endpoint.id, "--grace", "1h", "--json");
    expect(rotated.code, rotated.stderr).toBe(0);
    const { secret, oldSecretUntil } = JSON.parse(rotated.stdout);
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(endpoint.secret);
    expect(Date.parse(oldSecretUntil) - Date.now()).toBeGreaterThan(50 * 60_000);
    expect((await cli("webhook", "--test", endpoint.id)).code).toBe(0);
    const { Webhook } = await import("standardwebhooks");
    const verifies = (s: string, r: { body: string; headers: Record<string, string> }) => {
      try {
        return Boolean(new Webhook(s).verify(r.body, r.headers));
      } catch {
        return false;
      }
    };
    expect([verifies(endpoint.secret, receiver.requests[0]), verifies(secret, receiver.requests[0])]).toEqual([true, true]);

    const again = await cli("webhook", "--rotate-secret", endpoint.id, "--grace", "0");
    expect(again.code, again.stderr).toBe(0);
    const newest = again.stdout.trim();
    expect((await cli("webhook", "--test", endpoint.id)).code).toBe(0);
    expect([verifies(secret, receiver.requests[1]), verifies(newest, receiver.requests[1])]).toEqual([false, true]);
  }, 60_000);

  it("--server acts on a running service over GraphQL with the key in SERVICE_API_KEY; the endpoint it adds gets the events", async () => {
    const { cli, receiver, serve } = await setUp();
    const server = await serve();
    const admin = await createKeyWith(cli, "remote admin", "ADMIN");
    const remote = (...args: string[]) => runCli(["webhook", "--server", server.url, ...args], { env: { SERVICE_API_KEY: admin } });
    const added = await remote("--add", "--url", receiver.url, "--events", "key.deleted", "--json");
    expect(added.code, added.stderr).toBe(0);
    const { id, secret } = JSON.parse(added.stdout);
    expect(secret).toMatch(/^whsec_/);
    const listed = await remote("--list", "--json");
    expect(JSON.parse(listed.stdout).map((e: { id: string }) => e.id)).toContain(id);
    expect((await remote("--test", id)).code).toBe(2); // the service never hands out a signing secret

    receiver.secret = secret;
    await createKey(cli, "gone soon");
    expect((await cli("apikey", "--delete", "--name", "gone soon")).code).toBe(0);
    // The endpoint setUp added gets it too (with the same webhook-id): look for the request signed with this secret.
    await receiver.waitFor(() => receiver.requests.some((r) => r.type === "key.deleted" && r.verified), "the delete, signed with the remote endpoint's secret");
    const deliveries = await remote("--deliveries", id, "--json");
    expect(JSON.parse(deliveries.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ type: "key.deleted", ok: true })]));
    expect((await remote("--remove", id)).code).toBe(0);
    const viewer = await createKeyWith(cli, "remote viewer", "VIEWER");
    const refused = await runCli(["webhook", "--server", server.url, "--list", "--json"], { env: { SERVICE_API_KEY: viewer } });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).code).toBe("FORBIDDEN");
  }, 60_000);

  it("remove stops deliveries and an unknown id is NOT_FOUND (exit 1)", async () => {
    const { cli, endpoint } = await setUp();
    expect((await cli("webhook", "--remove", endpoint.id)).code).toBe(0);
    const again = await cli("webhook", "--remove", endpoint.id, "--json");
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ code: "NOT_FOUND" });
    expect(JSON.parse((await cli("webhook", "--list", "--json")).stdout)).toEqual([]);
  });

  it("refuses a plain-http URL to another host, a private address without --allow-private, and an unknown event type (exit 2)", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const cli = (...args: string[]) => runCli([...args, "--store", join(tmp.dir, "keys"), "--json"]);
    for (const [url, words] of [["http://example.com/hook", /loopback/], ["https://192.168.1.10/hook", /--allow-private/], ["ftp://example.com/", /scheme/]] as const) {
      const result = await cli("webhook", "--add", "--url", url);
      expect(result.code, url).toBe(2);
      expect(JSON.parse(result.stdout).error).toMatch(words);
    }
    expect((await cli("webhook", "--add", "--url", "https://192.168.1.10/hook", "--allow-private")).code).toBe(0);
    const bad = await cli("webhook", "--add", "--url", "https://example.com/", "--events", "key.creatd");
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).error).toMatch(/Unknown event type 'key.creatd'/);
    const memory = await runCli(["webhook", "--add", "--url", "https://example.com/", "--store", "memory:", "--json"]);
    expect(memory.code).toBe(2);
    expect(JSON.parse(memory.stdout).error).toMatch(/memory: keeps webhooks only inside one process/);
  });

  it("refuses flags its mode ignores and an update that changes nothing (exit 2, nothing changed), and takes --grace 0s as no grace", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const cli = (...args: string[]) => runCli([...args, "--store", join(tmp.dir, "keys"), "--json"]);
    const added = JSON.parse((await cli("webhook", "--add", "--url", "https://hooks.example.com/in")).stdout);
    for (const [args, words] of [
      [["--add", "--url", "https://hooks.example.com/two", "--disable"], /--enable and --disable go with --update/],
      [["--remove", added.id, "--allow-private"], /--allow-private goes with --add or --update/],
      [["--update", added.id], /--update needs something to change/],
    ] as const) {
      const result = await cli("webhook", ...args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(JSON.parse(result.stdout).error).toMatch(words);
    }
    expect(JSON.parse((await cli("webhook", "--list")).stdout)).toMatchObject([{ id: added.id, url: "https://hooks.example.com/in" }]);
    const rotated = await cli("webhook", "--rotate-secret", added.id, "--grace", "0s");
    expect(rotated.code, rotated.stdout).toBe(0);
    expect(JSON.parse(rotated.stdout).oldSecretUntil).toBeUndefined();
  });
});
