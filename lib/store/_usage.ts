/**
 * The use of keys: `recordUse` (last use and per-day counts, written by the use recorders off the request
 * path), `usage` (reading the counts) and `verifyDetailed` (a verification that says why, for services
 * that are not ours, counted as the verified key's use).
 *
 * Counts live in the key's record (`usage`: a total and a count per UTC day), rewritten under the key's
 * lock like `lastUsedAt`, so they never revive a deleted key nor lose an update made meanwhile; days
 * older than the last 30 are dropped on each write. They change no verification and bump nothing.
 */
import type { ApiKeyInfo, KeyUsage, KeyVerification, StoredKey, VerificationCode } from "../core/model.ts";
import { isKeyId } from "../core/input.ts";
import { can } from "../core/policy.ts";
import { allowedFrom } from "../core/allow-from.ts";
import { iso, type StoreContext } from "./_context.ts";
import { publicView } from "./_entries.ts";
import { createUseRecorder, dayOf, UNWRITTEN, type UseRecorder, type UseRecorderOptions } from "./last-use.ts";
import type { KeyUse, Refusal, VerifiedKey, VerifyOptions } from "./types.ts";
import type { RateLimiter } from "./rate-limiter.ts";
import type { CreditCounter } from "./credit-counter.ts";
import { controlUse, type UseControls } from "./_controls.ts";

/** How many UTC days of counts a key keeps, today included. */
export const USAGE_DAYS = 30;
const DAY_MS = 86_400_000;
const DAY = /^\d{4}-\d\d-\d\d$/;

/** The oldest day kept at `now`. */
const firstKept = (now: number) => dayOf(now - (USAGE_DAYS - 1) * DAY_MS);
const isCount = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n > 0;

/** `usage` grown by `days` (only well-formed days and whole counts: the record must stay readable), older days dropped. */
function counted(usage: StoredKey["usage"], days: Readonly<Record<string, number>>, now: number): NonNullable<StoredKey["usage"]> {
  const first = firstKept(now);
  const kept = new Map<string, number>();
  let total = usage?.total ?? 0;
  for (const [day, n] of Object.entries(usage?.days ?? {})) if (day >= first) kept.set(day, n);
  for (const [day, n] of Object.entries(days)) {
    if (!DAY.test(day) || !isCount(n)) continue;
    total += n;
    if (day >= first) kept.set(day, (kept.get(day) ?? 0) + n);
  }
  return { total, days: Object.fromEntries([...kept].sort(([a], [b]) => (a < b ? -1 : 1))) };
}

interface UsageDeps {
  verify(secret: string): Promise<VerifiedKey | null>;
  explain(secret: string): Promise<{ why: Refusal; key?: StoredKey }>;
  rateLimiter: RateLimiter;
  creditCounter: CreditCounter;
}

/** Adds the use `use` to key `id`'s record: its last use, its counts per day, and this process's credit count. */
async function recordOne(ctx: StoreContext, creditCounter: CreditCounter, id: string, use: number | KeyUse): Promise<void> {
  const { storage, atomic, entries, now } = ctx;
  if (!isKeyId(id)) return;
  const { at, days } = typeof use === "number" ? { at: use, days: undefined } : use;
  // Under the key's lock, like every rewrite of a record: a delete's clean-up runs before or after,
  // never between the read and the write, so a deleted key is never written back.
  await atomic.exclusive(`keys:${id}`, async () => {
    const record = await entries.readRecord(id);
    if (!record) return; // gone
    const later = Number.isFinite(at) && !(record.lastUsedAt && Date.parse(record.lastUsedAt) >= at);
    const adds = days !== undefined && Object.values(days).some(isCount);
    // This process's credit count, written with the use: see credit-counter.ts.
    const credits = record.credits && (await creditCounter.persist(id, record.credits, now()));
    if (!later && !adds && !credits) return; // a later use is there, and nothing to count
    const next: StoredKey = { ...record };
    if (later) next.lastUsedAt = iso(at);
    if (adds) next.usage = counted(record.usage, days, now());
    if (credits) next.credits = credits;
    await storage.setItem(`keys:${id}`, next).catch((error: unknown) => {
      if (credits) creditCounter.unwritten?.(id); // its spends go with the next write
      throw error;
    });
  });
}

/** `KeyStore.recordUse`: each key's use in turn; an error names the ids not written (`UNWRITTEN`). */
async function recordUse(ctx: StoreContext, creditCounter: CreditCounter, uses: ReadonlyMap<string, number | KeyUse>): Promise<void> {
  const ids = [...uses.keys()];
  for (const [i, id] of ids.entries()) {
    try {
      await recordOne(ctx, creditCounter, id, uses.get(id)!);
    } catch (error) {
      // Counts add up, so a retry must not repeat the keys already written: the error names those that were not.
      throw Object.assign(error instanceof Error ? error : new Error(String(error)), { [UNWRITTEN]: ids.slice(i) });
    }
  }
}

/** `KeyStore.usage`: the counts of a live key or one in its grace period, the days kept in order. */
async function readUsage({ entries, now }: StoreContext, id: string): Promise<KeyUsage | null> {
  const record = await entries.readRecord(id);
  if (!record || !((await entries.live(record)) || (await entries.inGrace(record)))) return null;
  const first = firstKept(now());
  const days = Object.entries(record.usage?.days ?? {}).filter(([day]) => day >= first).sort(([a], [b]) => (a < b ? -1 : 1));
  return { total: record.usage?.total ?? 0, days: days.map(([date, count]) => ({ date, count })) };
}

/** The answer of `verifyDetailed` for `code`, with what it may say of the key and of its limits and credits. */
const answer = (code: VerificationCode, key?: ApiKeyInfo, controls?: Omit<UseControls, "code">): KeyVerification => ({
  valid: code === "VALID",
  code,
  id: key?.id ?? null,
  name: key?.name ?? null,
  roles: key?.roles ?? null,
  permissions: key?.permissions ?? null,
  expiresAt: key?.expiresAt ?? null,
  credits: controls?.credits ?? null,
  ratelimits: controls?.ratelimits ?? null,
});

/** `KeyStore.verifyDetailed`: the verified key's use goes to `options.onUse`, else to the store's own `recorder`. */
async function verifyDetailed(
  ctx: StoreContext,
  deps: UsageDeps,
  recorder: () => UseRecorder,
  secret: string,
  options: VerifyOptions = {},
): Promise<KeyVerification> {
  if (typeof secret !== "string") return answer("NOT_FOUND");
  const key = await deps.verify(secret);
  if (key) {
    const { validity: _validity, creditState: _state, ...info } = key;
    // From outside the key's allow-list: not a use, so nothing counted and nothing spent.
    if (!allowedFrom(key.allowFrom, options.address)) return answer("IP_NOT_ALLOWED", info);
    // The verified key's use, coalesced like the service's: never a write per call.
    if (options.onUse) options.onUse(key.id);
    else recorder().seen(key.id);
    const lacking = (options.permissions ?? []).some((p) => p.actions.some((action) => !can(key, p.resource, action)));
    if (lacking) {
      // No use of its limits nor credits; its credits are shown as they stand, as for any refusal.
      const credits = key.creditState ? await deps.creditCounter.peek(key.id, key.creditState, ctx.now()) : null;
      return answer("INSUFFICIENT_PERMISSIONS", info, { credits, ratelimits: null });
    }
    const controls = await controlUse(deps.rateLimiter, deps.creditCounter, key, ctx.now());
    return answer(controls.code, info, controls);
  }
  const { why, key: record } = await deps.explain(secret);
  const code = why.reason === "expired" ? "EXPIRED" : why.reason === "disabled" ? "DISABLED" : "NOT_FOUND";
  return answer(code, record && publicView(record));
}

/**
 * The use of keys in the store of `ctx`. Its use recorder (for `verifyDetailed` calls without `onUse`) is
 * made on first need and written out by `close`.
 */
export function createUsage(ctx: StoreContext, deps: UsageDeps, recorderOptions: UseRecorderOptions = {}) {
  let recorder: UseRecorder | undefined;
  const record = (uses: ReadonlyMap<string, number | KeyUse>) => recordUse(ctx, deps.creditCounter, uses);
  const useRecorder = () => (recorder ??= createUseRecorder({ recordUse: record }, {
    ...recorderOptions,
    onError: (error) => {
      ctx.debug(`store: recording a verified key's use failed: ${error instanceof Error ? error.message : String(error)}`);
      recorderOptions.onError?.(error);
    },
  }));

  const counters = { rateLimiter: deps.rateLimiter, creditCounter: deps.creditCounter };
  return {
    recordUse: record,
    usage: (id: string) => readUsage(ctx, id),
    verifyDetailed: (secret: string, options?: VerifyOptions) => verifyDetailed(ctx, deps, useRecorder, secret, options),
    counters,
    close: async () => await recorder?.close(),
  };
}
