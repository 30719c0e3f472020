/**
 * What every change to a key is checked against: no escalation (a key grants only what it holds), no
 * un-metering (a key with credits or rate limits gives no key, itself included, more use than it has), no
 * outliving (a temporary key makes only temporary keys), the key acted on exists, and the grace period
 * asked for; and the calling key as the audit trail names it.
 */
import type { Actor, ApiKeyInfo } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { escalation, type Grants } from "../core/policy.ts";
import { type Metering, meteringEscalation } from "../core/metering.ts";
import type { VerifiedKey } from "../store/types.ts";
import { MAX_GRACE_MS, parseInstant, untilOf } from "../core/lifecycle.ts";
import type { KeyStore } from "../store/key-store.ts";
import { type Args, forbidden } from "./field-rule.ts";

/** Refuses to create or update a key with permissions the caller does not hold itself. */
export function noEscalation(actor: Grants, target: Grants): void {
  const extra = escalation(actor, target);
  if (extra.length) {
    const shown = extra.slice(0, 5).join(", ") + (extra.length > 5 ? `, and ${extra.length - 5} more` : "");
    throw forbidden(`Forbidden: an API key can only grant permissions it holds itself; missing ${shown}`);
  }
}

/**
 * Refuses to give a key more use than a metered caller has itself (`core/metering.ts`): `given` holds the
 * controls a create gives (both, absent or null meaning none) or those an update sets (only the ones it
 * names). The caller's credits are what it has left now, as counted (this request's credit taken).
 * `targetId`: the key changed, when it exists; the caller itself keeps each window of its rate limits.
 */
export async function noUnmetering(key: ApiKeyInfo & Partial<Pick<VerifiedKey, "creditState">>, store: KeyStore, given: Metering, targetId?: string): Promise<void> {
  if (!key.credits && !key.rateLimits?.length) return; // unmetered: its permissions alone decide
  const state = key.creditState;
  const left = state && store.creditCounter ? await store.creditCounter.peek(key.id, state, Date.now()) : key.credits?.remaining;
  const own: Metering = {
    credits: "credits" in given && key.credits ? { ...key.credits, remaining: left ?? 0 } : null,
    rateLimits: "rateLimits" in given ? key.rateLimits : null,
  };
  const needs = meteringEscalation(own, given, targetId === key.id);
  if (needs.length) {
    throw forbidden(`Forbidden: this API key has credits or rate limits, and cannot give a key (itself included) more use than it has; the key needs ${needs.join("; ")}`);
  }
}

/**
 * A key that expires (or is in its grace period) cannot make a key outlive it: what it creates, or an
 * expiry it sets, must end no later than itself. So a temporary key stays temporary, and so does all it made.
 */
export function noOutliving(key: ApiKeyInfo, expiresAt: unknown): void {
  const until = Math.min(untilOf(key.expiresAt), untilOf(key.graceUntil));
  if (until === Infinity) return;
  if (expiresAt == null || parseInstant(expiresAt, "expiresAt") > until) {
    throw forbidden(`Forbidden: this API key stops working at ${new Date(until).toISOString()}; a key it creates or changes must expire no later (give expiresAt)`);
  }
}

export async function target(store: KeyStore, id: string): Promise<ApiKeyInfo> {
  const found = await store.get(id);
  if (!found) throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
  return found;
}

/** The calling key, as the audit trail names who made a change. */
export const actorOf = (key: ApiKeyInfo): Actor => ({ kind: "key", id: key.id, name: key.name });

/** `CreateApiKeyInput.graceSeconds` in ms, checked: only with overwrite, 1 s to 24 h. */
export function graceOf(input: Args): number | undefined {
  const seconds = input.graceSeconds;
  if (seconds == null) return undefined;
  if (!input.overwrite) throw new ServiceError("INVALID_INPUT", "graceSeconds needs overwrite: true (it keeps the replaced key's secret working)");
  if (!(seconds >= 1 && seconds * 1000 <= MAX_GRACE_MS)) {
    throw new ServiceError("INVALID_INPUT", `graceSeconds is from 1 to ${MAX_GRACE_MS / 1000} (24 hours) (got ${seconds})`);
  }
  return seconds * 1000;
}
