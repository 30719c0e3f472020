/**
 * The service's log lines on stderr: one access line per request (info), rate-limited warnings about
 * failed authentications, and the service's own lines (listening, outage, stopping). Text by default;
 * `LOG_FORMAT=json` writes one JSON object per line instead. Never a secret and never a body: an access
 * line holds the method, the path without its query string (it may carry a query or variables), the
 * status, the duration, and the key's id and name.
 *
 * Lines are batched: written FLUSH_MS after the first line of a batch, or at once when the batch passes
 * FLUSH_BYTES, and by `flush()`. A write to a pipe is synchronous on Linux and costs about as much per call
 * as the request it logs; one write per turn of the event loop still cost 6-15 µs a request under load.
 * Whatever is pending is also written when the process exits (an `exit` listener, which Node runs on
 * `process.exit()` and after an uncaught exception too), so a stop loses nothing.
 *
 * The batch is UTF-8 bytes in a buffer outside the JS heap, not a string. Appended to a string, each
 * pending line stayed in the heap as a rope of small strings until the flush, up to 50 ms later: the
 * young-generation collections under load copied 100-140 KB of them every time, which doubled each pause
 * (0.9 against 0.4 ms), and a pause holds every request in flight: it set the service's p99. Encoded at
 * once, a line dies young. The test "holds pending lines outside the JS heap" fails if that changes.
 */
import { Buffer } from "node:buffer";
import { type LogLevelName, resolveLogLevel } from "../core/log.ts";
import { redactSecretsInPath } from "../core/secret.ts";
import type { AuthFailure, RequestEvent, RetiredKeyUse, ServiceObserver } from "./types.ts";

type Level = "error" | "warn" | "info" | "debug";
const RANK: Record<LogLevelName, number> = { silent: 0, error: 1, warn: 2, info: 3, debug: 4, trace: 5 };

export interface ServiceLog extends Pick<ServiceObserver, "request" | "authFailed" | "retiredKeyUsed"> {
  /** A service line (listening, outage, stopping) at `level`; dropped below the configured level. */
  line(level: Level, message: string): void;
  /** An info line written at every level but `silent`: what the operator cannot learn elsewhere (a port the system chose). */
  announce(message: string): void;
  /** Writes what is buffered now (before exit). */
  flush(): void;
}

/** How long a line may wait for others before it is written (ms). */
export const FLUSH_MS = 50;
/** A batch this long (UTF-8 bytes) is written at once. */
export const FLUSH_BYTES = 64 * 1024;
/** Room in a batch: FLUSH_BYTES and the longest line that may still be added just under it. */
const BATCH_ROOM = FLUSH_BYTES + 16 * 1024;

/** Logs holding unwritten lines, written by one `exit` listener for all. */
const pending = new Set<() => void>();
let exitHook = false;
const flushAllOnExit = () => {
  for (const flush of [...pending]) flush();
};

export interface ServiceLogOptions {
  env?: Record<string, string | undefined>;
  /** Where lines go (default stderr). */
  write?: (text: string) => void;
  /** At most one warning per failure reason per this many ms (default 10 s); the others are counted. */
  authWarnEveryMs?: number;
}

/** `LOG_FORMAT`: "json" for JSON lines, anything else (or unset) for text. */
export const isJsonFormat = (env: Record<string, string | undefined>) => (env.LOG_FORMAT ?? "").trim().toLowerCase() === "json";

const REASONS: Record<AuthFailure, string> = {
  missing: "no API key",
  malformed: "malformed API key or Authorization header",
  unknown: "unknown or revoked API key",
  expired: "expired API key",
  disabled: "disabled API key",
  address: "API key used from an address outside its allow-list",
};

/** Lines gathered in one buffer and written together, at FLUSH_BYTES or after FLUSH_MS. */
function batchedLines(write: (text: string) => void) {
  const batch = Buffer.allocUnsafeSlow(BATCH_ROOM); // decoded at the flush, so it is reused
  let used = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer), (timer = undefined);
    pending.delete(flush);
    if (used === 0) return;
    const text = batch.toString("utf8", 0, used);
    used = 0;
    write(text);
  };
  const emit = (text: string) => {
    // At most 3 bytes of UTF-8 per UTF-16 unit (a lone surrogate becomes U+FFFD, 3 bytes), and the newline.
    const most = text.length * 3 + 1;
    if (used + most > batch.length) {
      flush();
      if (most > batch.length) return write(text + "\n"); // a line longer than a batch goes on its own
    }
    used += batch.write(text, used);
    batch[used++] = 0x0a;
    if (used >= FLUSH_BYTES) return flush();
    if (timer !== undefined) return;
    // Unref'd: a pending line never keeps the process alive; the exit listener writes it instead.
    timer = setTimeout(flush, FLUSH_MS);
    (timer as { unref?: () => void }).unref?.();
    pending.add(flush);
    if (!exitHook && typeof process !== "undefined") (exitHook = true), process.on("exit", flushAllOnExit);
  };
  return { emit, flush };
}

/** @example const log = createServiceLog(); log.request({ method: "GET", path: "/healthz", status: 200, ms: 0.3, operation: "none" }); */
export function createServiceLog(options: ServiceLogOptions = {}): ServiceLog {
  const env = options.env ?? process.env;
  const rank = RANK[resolveLogLevel(env.LOG_LEVEL).level];
  const json = isJsonFormat(env);
  const write = options.write ?? ((text: string) => void process.stderr.write(text));
  const every = options.authWarnEveryMs ?? 10_000;
  const { emit, flush } = batchedLines(write);
  // The quoted " key=… name=…" of a key, built once per key object (`verify` hands back the same object
  // while it remembers the key, and a new one after any change to it).
  const keyText = new WeakMap<object, string>();
  let lastPath = "";
  let lastEscaped = "";
  const format = (level: Level, message: string, fields?: Record<string, unknown>) => {
    if (json) return JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields });
    return level === "info" || level === "debug" ? message : `${level}: ${message}`;
  };
  const line = (level: Level, message: string, fields?: Record<string, unknown>) => {
    if (RANK[level] <= rank) emit(format(level, message, fields));
  };
  const warned = new Map<AuthFailure, { at: number; suppressed: number }>();

  return {
    line: (level, message) => line(level, message),
    announce: (message) => {
      if (rank > RANK.silent) emit(format("info", message));
    },
    flush,
    request(event: RequestEvent) {
      if (rank < RANK.info) return;
      const ms = Math.round(event.ms * 100) / 100;
      // A key pasted into the URL (`GET /sapi_…`) is not echoed, however it is spelled; `/graphql` is too
      // short to be looked at.
      const path = redactSecretsInPath(event.path);
      if (path !== event.path) event = { ...event, path };
      if (json) {
        const key = event.key ? { keyId: event.key.id, keyName: event.key.name } : {};
        return line("info", "request", { method: event.method, path: event.path, status: event.status, ms, ...key });
      }
      // The name is quoted as JSON: a name holding spaces or quotes cannot forge the line's fields.
      let key = "";
      if (event.key) {
        key = keyText.get(event.key) ?? "";
        if (!key) keyText.set(event.key, (key = ` key=${event.key.id} name=${JSON.stringify(event.key.name)}`));
      }
      // The path escaped as a JSON string's inside (no newline or quote survives); most requests repeat the last one.
      if (event.path !== lastPath) (lastPath = event.path), (lastEscaped = JSON.stringify(lastPath).slice(1, -1));
      emit(`${event.method} ${lastEscaped} ${event.status} ${ms}ms${key}`);
    },
    authFailed(reason: AuthFailure) {
      if (rank < RANK.warn) return;
      const now = Date.now();
      const seen = warned.get(reason);
      if (seen && now - seen.at < every) return void seen.suppressed++;
      const suppressed = seen?.suppressed ?? 0;
      warned.set(reason, { at: now, suppressed: 0 });
      const more = suppressed ? ` (${suppressed} more since the last such line)` : "";
      line("warn", `authentication failed: ${REASONS[reason]}${more}`, { reason, suppressed });
    },
    // Every time: a retired secret in use is the usual sign of a leak or of a missed rotation.
    retiredKeyUsed({ id, name, address = "unknown" }: RetiredKeyUse) {
      line("warn", `retired API key presented again: key=${id} name=${JSON.stringify(name)} from=${JSON.stringify(address)}`, { keyId: id, keyName: name, address });
    },
  };
}
