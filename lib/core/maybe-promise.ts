/**
 * A value that may come later. The service's request path answers without a promise whenever nothing on
 * the way waited (a remembered verification on the files store, a remembered answer, a compiled query of
 * synchronous resolvers): each promise costs microtask turns and allocations a small request notices.
 * Every module composes such values with `after`; `isPromise` is for where waiting itself changes what
 * must be done (a request body that came later is checked against the store again).
 */
export type MaybePromise<T> = T | Promise<T>;

/** True for a promise (any thenable). */
export const isPromise = <T>(value: MaybePromise<T>): value is Promise<T> =>
  typeof (value as { then?: unknown } | null)?.then === "function";

/** `next(value)`, now when `value` is here, or once it settles (a rejection passes to `failed`, if given). */
export function after<T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>, failed?: (error: unknown) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(value) ? value.then(next, failed) : next(value);
}
