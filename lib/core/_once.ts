/**
 * A value made on first use and kept: for what costs start-up time to build and a command may never need
 * (Unicode property patterns, which V8 parses when their literal is evaluated; fs wrappers; facts about
 * the host). `make` runs once, whatever it returns (undefined included).
 * @example const MARK = once(() => /\p{M}/u); MARK().test("\u0301") // true
 */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
