// The cache of parsed documents is bounded by estimated heap, not only by count: each compiled operation
// holds generated code (kilobytes), so a document of many operations, each run until compiled, weighs
// hundreds of times a small one. Filled with such documents, the cache keeps within its byte bound, and
// so does the heap the service holds.
import { afterEach, expect, it } from "vitest";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createServiceHandler } from "../../lib/http/handler.ts";
import type { ServiceRequest, ServiceResponse } from "../../lib/http/types.ts";
import { COMPILE_AFTER } from "../../lib/graphql/compiled.ts";
import { DOCUMENT_LIMITS } from "../../lib/graphql/documents.ts";
import { documentCache } from "../../lib/graphql/prepared.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const heap = () => (gc(), gc(), process.memoryUsage().heapUsed);

const bound = DOCUMENT_LIMITS.cacheBytes;
afterEach(() => void (DOCUMENT_LIMITS.cacheBytes = bound));

/** A document of `count` operations, each selecting a few fields: distinct text per `tag`. */
const manyOperations = (tag: string, count: number) =>
  Array.from({ length: count }, (_, i) => `query ${tag}_${i} { me { id name roles } online }`).join("\n");

it("holds many-operation documents, each operation compiled, within its byte bound", { timeout: 120_000 }, async () => {
  DOCUMENT_LIMITS.cacheBytes = 4 * 1024 * 1024; // a lower bound, to fill it quickly
  const store = createKeyStore();
  const { key } = await store.create({ name: "guest", roles: ["GUEST"], permissions: [] });
  const handle = createServiceHandler({ store, recordLastUse: false });
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const send = async (query: string, operationName: string) => {
    const body = JSON.stringify({ query, operationName });
    const request: ServiceRequest = { method: "POST", url: "/graphql", headers: { get: (name) => headers[name] ?? null }, body: () => body };
    return (await handle(request)) as ServiceResponse;
  };
  const before = heap();
  let peak = 0;
  for (let d = 0; d < 40; d++) {
    const query = manyOperations(`d${d}`, 60);
    for (let run = 0; run < COMPILE_AFTER + 1; run++) {
      for (let op = 0; op < 60; op++) expect((await send(query, `d${d}_${op}`)).status).toBe(200);
    }
    peak = Math.max(peak, documentCache().bytes);
    expect(documentCache().bytes).toBeLessThanOrEqual(DOCUMENT_LIMITS.cacheBytes);
  }
  // Full: the bound is reached, not just respected by holding nothing.
  expect(peak).toBeGreaterThan(DOCUMENT_LIMITS.cacheBytes / 2);
  // What the service holds afterwards: the bound, plus a fixed overhead (graphql-jit's first compiles,
  // V8's code for them: about 8 MB here, the same after 10 documents as after 80), where a cache bounded
  // by count alone held all 40 documents (about 32 MB).
  expect(heap() - before).toBeLessThan(DOCUMENT_LIMITS.cacheBytes + 16 * 1024 * 1024);
  await handle.close();
});
