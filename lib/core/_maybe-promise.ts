/**
 * A value that may be there at once or later: hot paths return it plain when nothing had to wait, so that
 * an answer ready at once costs no promise and no turn of the microtask queue.
 */
export type MaybePromise<T> = T | Promise<T>;

/** True when `value` must be awaited: a promise or any other thenable. */
export const isPromise = <T>(value: MaybePromise<T>): value is Promise<T> => typeof (value as { then?: unknown } | null)?.then === "function";
