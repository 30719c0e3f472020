/**
 * Logging for people, always on stderr (stdout carries data only). `LOG_LEVEL` picks the level:
 * silent, error, warn, info (default), debug, trace. Nothing logged ever contains a secret: callers
 * log ids and names, the store never sees a secret after hashing it, and a debug line quoting what was
 * typed (a `--store` path) has any secret in it elided (`redactSecrets`).
 */
import type { ConsolaInstance } from "consola/basic";
import { redactSecrets } from "./secret.ts";

const LOG_LEVEL_NAMES = ["silent", "error", "warn", "info", "debug", "trace"] as const;
export type LogLevelName = (typeof LOG_LEVEL_NAMES)[number];

/** A level name from `LOG_LEVEL`; an unknown value falls back to info with a warning. */
export function resolveLogLevel(value: string | undefined): { level: LogLevelName; unknown?: string } {
  const wanted = (value ?? "").trim().toLowerCase();
  if (!wanted) return { level: "info" };
  return (LOG_LEVEL_NAMES as readonly string[]).includes(wanted)
    ? { level: wanted as LogLevelName }
    : { level: "info", unknown: value };
}

/**
 * A consola instance writing to stderr at the level `LOG_LEVEL` asks for. consola is imported on
 * demand: a command run at the default level never needs it (see `createDebug`).
 */
async function createLogger(env: Record<string, string | undefined> = process.env): Promise<ConsolaInstance> {
  const { level, unknown } = resolveLogLevel(env.LOG_LEVEL);
  const { createConsola, LogLevels } = await import("consola/basic");
  const logger = createConsola({
    level: LogLevels[level],
    stdout: process.stderr,
    stderr: process.stderr,
    formatOptions: { date: false, colors: false },
  });
  if (unknown) logger.warn(`Unknown LOG_LEVEL '${unknown}'; using info. Valid: ${LOG_LEVEL_NAMES.join(", ")}`);
  return logger;
}

/** A debug-line sink: consola's when `LOG_LEVEL` is debug or trace (or needs a warning), else a no-op. */
export async function createDebug(env: Record<string, string | undefined> = process.env): Promise<(message: string) => void> {
  const { level, unknown } = resolveLogLevel(env.LOG_LEVEL);
  if (level !== "debug" && level !== "trace" && !unknown) return () => {};
  const logger = await createLogger(env);
  return (message) => logger.debug(redactSecrets(message));
}
