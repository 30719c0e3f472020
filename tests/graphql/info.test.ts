// Query.info computes only the host facts a request selects, and reads the fixed ones once.
import os from "node:os";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { createHandler } from "../../lib/http/fetch.ts";

const store = createKeyStore();
const handler = createHandler({ store, onError: () => {} });
const { key } = await store.create({ name: "info reader", roles: [], permissions: [{ resource: "INFO", actions: ["READ_ANY"] }] });

async function gql(query: string) {
  const response = await handler(
    new Request("http://service/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ query }),
    }),
  );
  return (await response.json()) as { data?: { info: Record<string, unknown> }; errors?: unknown[] };
}

afterEach(() => vi.restoreAllMocks());

describe("Query.info", () => {
  it("answers { info { hostname } } without enumerating the CPUs", async () => {
    const cpus = vi.spyOn(os, "cpus");
    const hostname = vi.spyOn(os, "hostname");
    const body = await gql("{ info { hostname } }");
    expect(body).toEqual({ data: { info: { hostname: os.hostname() } } });
    expect(hostname).toHaveBeenCalledTimes(2); // once by the service, once just above
    expect(cpus).not.toHaveBeenCalled();
  });

  it("reads the CPU count at most once per process, and the hostname and memory on every request", async () => {
    const count = os.cpus().length;
    const cpus = vi.spyOn(os, "cpus");
    const hostname = vi.spyOn(os, "hostname");
    const freemem = vi.spyOn(os, "freemem");
    for (let i = 0; i < 3; i++) {
      const body = await gql("{ info { hostname cpus memory { free } } }");
      expect(body.errors).toBeUndefined();
      expect(body.data!.info.cpus).toBe(count);
    }
    expect(cpus.mock.calls.length).toBeLessThanOrEqual(1);
    expect(hostname).toHaveBeenCalledTimes(3);
    expect(freemem).toHaveBeenCalledTimes(3);
  });
});
