/**
 * The store's error wrapper: whatever a store operation throws reaches its caller as a `ServiceError`,
 * a system error (EACCES, ENOSPC, ...) as STORE_UNAVAILABLE naming what failed and how to fix it.
 */
import { isServiceError, ServiceError } from "../core/errors.ts";
import { describeSystemError } from "./_system-errors.ts";

/** `error`, met while trying to do `what`, as the store reports it. */
export function storeError(what: string, error: unknown): ServiceError {
  if (isServiceError(error)) return error;
  const reason = describeSystemError(error) ?? (error instanceof Error ? error.message : String(error));
  return new ServiceError("STORE_UNAVAILABLE", `Key store unavailable while trying to ${what}: ${reason}`, {
    cause: error,
  });
}

/** Runs `fn`, turning what it throws into the store's error for `what`. */
export async function guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw storeError(what, error);
  }
}
