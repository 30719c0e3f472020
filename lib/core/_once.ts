/**
 * A value made on first use and kept: for what costs start-up time to build and a command may never need
 * (Unicode property patterns, which V8 parses when their literal is evaluated; node:crypto; fs wrappers).
 * @example const MARK = once(() => /\p{M}/u); MARK().test("\u0301") // true
 */
export function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}
