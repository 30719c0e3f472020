/**
 * doctor's `webhooks` line, present when the store has endpoints: how many (and how many disabled), the
 * messages they wait for, and the latest failed attempt. It fails when an endpoint was disabled for
 * failing (its receiver has been down for days): deliveries to it have stopped.
 */
import type { KeyStore } from "../store/types.ts";
import { endpointBacklog } from "../store/webhooks/backlog.ts";

export async function webhooksCheck(store: Pick<KeyStore, "audit" | "webhooks">): Promise<{ name: "webhooks"; ok: boolean; detail: string } | undefined> {
  const endpoints = (await store.webhooks?.list()) ?? [];
  if (!endpoints.length) return undefined;
  const seen = await Promise.all(endpoints.map(async (e) => ({ endpoint: e, ...(await endpointBacklog(store, e)) })));
  const backlog = seen.reduce((n, s) => n + s.backlog, 0);
  const failures = seen.flatMap((s) => (s.lastFailure ? [{ endpoint: s.endpoint.id, ...s.lastFailure }] : [])).sort((a, b) => a.at.localeCompare(b.at));
  const last = failures.at(-1);
  const disabled = endpoints.filter((e) => e.disabled);
  const failing = disabled.filter((e) => e.disabledReason?.startsWith("failing since"));
  const parts = [
    `${endpoints.length} endpoint${endpoints.length === 1 ? "" : "s"}${disabled.length ? ` (${disabled.length} disabled)` : ""}`,
    `backlog ${backlog}`,
    last ? `last failure ${last.at} (${last.endpoint}: ${last.error ?? `answered ${last.status}`})` : "no failure",
    ...failing.map((e) => `${e.id} disabled after failing for days: fix its receiver, then webhook --update ${e.id} --enable`),
  ];
  return { name: "webhooks", ok: failing.length === 0, detail: parts.join("; ") };
}
