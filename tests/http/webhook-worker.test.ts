// The delivery worker on a memory store, with its clock and its sender replaced: the retry schedule (at
// least a day, then the next event), and an endpoint disabled after failing for days.
import { afterEach, describe, expect, it } from "vitest";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { startWebhookWorker, type WebhookWorker } from "../../lib/http/webhooks/worker.ts";
import type { SendResult } from "../../lib/http/webhooks/send.ts";
import type { WebhookMessage } from "../../lib/store/webhooks/events.ts";
import { input } from "../helpers/keys.ts";
import type { CreateKeyInput } from "../../lib/core/model.ts";

const HOUR = 3_600_000;
let worker: WebhookWorker | undefined;
afterEach(async () => {
  await worker?.stop();
  worker = undefined;
});

async function setUp(keys: number, extra: Partial<CreateKeyInput> = {}) {
  let offset = 0;
  const sent: WebhookMessage[] = [];
  const logged: string[] = [];
  const control = { answer: { ok: false, status: 503, error: "answered 503" } as SendResult };
  const store = createKeyStore();
  const { endpoint } = await store.webhooks!.add({ url: "https://hooks.example.com/in" });
  for (let i = 0; i < keys; i++) await store.create(input(`key ${i}`, extra));
  worker = startWebhookWorker({
    store,
    tickMs: 5,
    now: () => Date.now() + offset,
    send: async (_url, _rules, _secrets, message) => (sent.push(message), control.answer),
    log: (_level, line) => logged.push(line),
  });
  await worker.pass();
  return { store, endpoint, sent, logged, control, later: async (ms: number) => ((offset += ms), await worker!.pass()) };
}

describe("the webhook worker", () => {
  it("retries a failing event on Svix's schedule with the same id for over a day, then gives it up and goes on", async () => {
    const { sent, later, store, endpoint } = await setUp(2);
    expect(sent).toHaveLength(1);
    await later(4_000 * 0.8 - 100); // before the earliest jittered retry
    expect(sent).toHaveLength(1);
    let waited = 0;
    for (const base of [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000, 36_000_000]) {
      await later(base * 1.2 + 1);
      waited += base * 1.2 + 1;
    }
    expect(waited).toBeGreaterThan(24 * HOUR);
    const first = sent.filter((m) => m.id === sent[0].id);
    expect(first).toHaveLength(9);
    await later(1);
    expect(sent.at(-1)!.id).not.toBe(sent[0].id);
    expect(sent.at(-1)!.body).toContain("key 1");
    const { attempts } = await store.webhooks!.state(endpoint.id);
    expect(attempts.at(-1)).toMatchObject({ ok: false, status: 503, attempt: 1 });
  });

  it("a success moves on at once; an endpoint failing for 5 days is disabled and said so", async () => {
    const { sent, later, store, endpoint, logged, control } = await setUp(5);
    for (let i = 0; i < 40 && !(await store.webhooks!.get(endpoint.id))!.disabled; i++) await later(11 * HOUR);
    const disabled = (await store.webhooks!.get(endpoint.id))!;
    expect(disabled).toMatchObject({ disabled: true, disabledReason: expect.stringMatching(/^failing since /) });
    expect(logged.some((l) => /disabled/.test(l))).toBe(true);
    const tried = sent.length;
    await later(11 * HOUR);
    expect(sent).toHaveLength(tried);

    await store.webhooks!.update(endpoint.id, { disabled: false });
    control.answer = { ok: true, status: 204 };
    await later(40 * HOUR);
    await later(1);
    const names = new Set(sent.slice(tried).map((m) => JSON.parse(m.body).data.name));
    expect(names.size).toBeGreaterThan(0);
    expect((await store.webhooks!.state(endpoint.id)).failingSince).toBeUndefined();
  });

  it("tells of a key's coming expiry once (key.expiring) and of its expiry once (key.expired), with a stable webhook-id", async () => {
    const { sent, later, control } = await setUp(1, { expiresAt: new Date(Date.now() + HOUR).toISOString() });
    control.answer = { ok: false, status: 500, error: "answered 500" };
    await later(61_000); // a failed key.expiring is tried again at the next look, under the same id
    control.answer = { ok: true, status: 204 };
    await later(61_000);
    await later(61_000);
    const expiring = sent.filter((m) => m.type === "key.expiring");
    expect(expiring.length).toBeGreaterThanOrEqual(2);
    expect(new Set(expiring.map((m) => m.id)).size).toBe(1);
    const told = expiring.length;
    await later(61_000);
    expect(sent.filter((m) => m.type === "key.expiring")).toHaveLength(told);
    await later(2 * HOUR);
    await later(61_000);
    const expired = sent.filter((m) => m.type === "key.expired");
    expect(expired).toHaveLength(1);
    expect(JSON.parse(expired[0].body)).toMatchObject({ type: "key.expired", data: { name: "key 0", expiresAt: expect.any(String) } });
  });

  it("events from just before an endpoint was made never fill its batch: what comes after is delivered", async () => {
    const store = createKeyStore();
    for (let i = 0; i < 12; i++) await store.create(input(`before ${i}`));
    await new Promise((r) => setTimeout(r, 5));
    await store.webhooks!.add({ url: "https://hooks.example.com/in" });
    for (let i = 0; i < 3; i++) await store.create(input(`after ${i}`));
    const sent: string[] = [];
    worker = startWebhookWorker({ store, tickMs: 5, batch: 5, send: async (_u, _r, _s, message) => (sent.push(JSON.parse(message.body).data.name), { ok: true, status: 204 }) });
    await worker.pass();
    await worker.pass();
    expect(sent).toEqual(["after 0", "after 1", "after 2"]);
  });
});
