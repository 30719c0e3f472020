/**
 * True when `error` carries one of the system error codes (`ENOENT`, `EEXIST`, ...): how Node and Deno
 * report what a file system call found.
 * @example isCode(error, "ENOENT", "ENOTDIR")
 */
export function isCode(error: unknown, ...codes: string[]): boolean {
  return codes.includes((error as { code?: string } | null)?.code ?? "");
}
