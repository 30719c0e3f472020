/**
 * Logging for people, always on stderr (stdout carries data only). `LOG_LEVEL` picks the level:
 * silent, error, warn, info (default), debug, trace. Nothing logged ever contains a secret: callers
 * log ids and names, and the store never sees a secret after hashing it.
 */
import process from "node:process";
import { createConsola, type ConsolaInstance, LogLevels } from "consola/basic";

export const LOG_LEVEL_NAMES = ["silent", "error", "warn", "info", "debug", "trace"] as const;
export type LogLevelName = (typeof LOG_LEVEL_NAMES)[number];

/** A level name from `LOG_LEVEL`; an unknown value falls back to info with a warning. */
export function resolveLogLevel(value: string | undefined): { level: LogLevelName; unknown?: string } {
  const wanted = (value ?? "").trim().toLowerCase();
  if (!wanted) return { level: "info" };
  return (LOG_LEVEL_NAMES as readonly string[]).includes(wanted)
    ? { level: wanted as LogLevelName }
    : { level: "info", unknown: value };
}

/** A consola instance writing to stderr at the level `LOG_LEVEL` asks for. */
export function createLogger(env: Record<string, string | undefined> = process.env): ConsolaInstance {
  const { level, unknown } = resolveLogLevel(env.LOG_LEVEL);
  const logger = createConsola({
    level: LogLevels[level],
    stdout: process.stderr,
    stderr: process.stderr,
    formatOptions: { date: false, colors: false },
  });
  if (unknown) logger.warn(`Unknown LOG_LEVEL '${unknown}'; using info. Valid: ${LOG_LEVEL_NAMES.join(", ")}`);
  return logger;
}
