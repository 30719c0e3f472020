/**
 * Tells the operator why the service answers 503: once when the store becomes unavailable (with the
 * cause), once when it works again, never once per request, so an outage under load neither goes
 * unexplained nor floods the log.
 */
import { redactSecrets } from "../core/secret.ts";

export interface StoreStatusLog {
  /** The store just failed after working (or on the first failure): the error, with the cause. */
  down(line: string): void;
  /** The store works again after an outage. */
  up(line: string): void;
}

/**
 * The cause of a store failure as one line: the store's own message (it names the operation and the
 * system error with its path), without a secret, a hash of one, or credentials in a URL.
 */
export function describeStoreError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return redactSecrets(message)
    .replace(/:\/\/\S*@/g, "://***@") // greedy: a password may itself hold "@" or "/"
    .replace(/\b[0-9a-f]{64}\b/g, "<hash>") // store file names are SHA-256 hashes of secrets
    .replace(/\p{Cc}/gu, " ");
}

/**
 * Tracks whether the store is working and logs each change of state once. Recovery is declared only
 * after `quietMs` without a failure, so a partial outage (the revision readable, records not) where
 * requests alternate between working and failing is one outage, not a line per request.
 */
export function createOutageTracker(log: StoreStatusLog, quietMs = 5_000) {
  let down = false;
  let lastFailure = 0;
  return {
    failed(error: unknown): void {
      lastFailure = Date.now();
      if (down) return;
      down = true;
      log.down(`key store unavailable, answering 503 until it recovers: ${describeStoreError(error)}`);
    },
    /** Called after every request that used the store without a failure: one boolean test normally. */
    worked(): void {
      if (!down || Date.now() - lastFailure < quietMs) return;
      down = false;
      log.up("key store available again");
    },
  };
}

/**
 * Tells the operator when last-use records cannot be written: once when writing fails (with the cause),
 * once when it works again. Requests are answered meanwhile (the recorder retries off the request path),
 * so this never makes a 503 nor counts as a store outage.
 */
export function createLastUseLog(log: StoreStatusLog) {
  let failing = false;
  return {
    failed(error: unknown): void {
      if (failing) return;
      failing = true;
      log.down(`cannot record when keys were last used, will retry (requests are answered meanwhile): ${describeStoreError(error)}`);
    },
    worked(): void {
      if (!failing) return;
      failing = false;
      log.up("recording when keys were last used again");
    },
  };
}
