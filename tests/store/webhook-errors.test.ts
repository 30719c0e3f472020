// A webhook endpoint's store failing (a full disk, a directory the user may not write) is reported as every
// other store failure is: STORE_UNAVAILABLE naming what was being done (exit 3), not a raw system error.
import { describe, expect, it } from "vitest";
import { createStorage } from "unstorage";
import { createLocalAtomicIndex } from "../../lib/store/atomic.ts";
import { createWebhookStore } from "../../lib/store/webhooks/endpoints.ts";

describe("webhook endpoints on a store that fails", () => {
  it("reports a system error as STORE_UNAVAILABLE naming the step", async () => {
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    storage.setItem = async () => {
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    };
    const refused = await createWebhookStore(storage, atomic).add({ url: "https://hooks.example.com/in" }).catch((error) => error);
    expect(refused).toMatchObject({ code: "STORE_UNAVAILABLE", message: expect.stringMatching(/^Key store unavailable while trying to add a webhook endpoint: /) });
  });
});
