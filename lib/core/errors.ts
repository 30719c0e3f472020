/** Error codes, with the process exit status and HTTP status each maps to. */
export const ERROR_CODES = {
  INVALID_INPUT: { exit: 2, http: 400 },
  USAGE: { exit: 2, http: 400 },
  NAME_TAKEN: { exit: 1, http: 409 },
  NOT_FOUND: { exit: 1, http: 404 },
  NO_KEYS: { exit: 1, http: 404 },
  // Its own status, so a `set -e` script tells a broken environment from "name taken" or "nothing to delete".
  STORE_UNAVAILABLE: { exit: 3, http: 503 },
  // A change made on the Redis master that no replica confirmed in time: a failover could still undo it.
  NOT_REPLICATED: { exit: 3, http: 503 },
  UNAUTHENTICATED: { exit: 1, http: 401 },
  // A disabled key is refused like an expired one (401), with a code of its own so a client can tell.
  KEY_DISABLED: { exit: 1, http: 401 },
  FORBIDDEN: { exit: 1, http: 403 },
  CANCELLED: { exit: 130, http: 400 },
  INTERNAL: { exit: 1, http: 500 },
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The one error class of the toolkit. `code` is stable and machine-readable; `message` says what
 * failed and how to fix it, and never contains a secret.
 *
 * @example
 * throw new ServiceError("NAME_TAKEN", "API key with name 'ci' already exists. Use --overwrite to replace it.");
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ServiceError";
    this.code = code;
  }
  /** Process exit status for this error. */
  get exitCode(): number {
    return ERROR_CODES[this.code].exit;
  }
  /** HTTP status for this error. */
  get status(): number {
    return ERROR_CODES[this.code].http;
  }
}

/**
 * True for a `ServiceError` (or a subclass such as `ClientError`) from any copy of this module: the built
 * CLI loads heavy commands from separate bundles, each with its own copy of the class, so `instanceof`
 * alone would miss theirs. Recognised by shape: an Error whose `code` is one of `ERROR_CODES`.
 *
 * @example
 * catch (error) { if (isServiceError(error)) process.exitCode = error.exitCode; }
 */
export function isServiceError(value: unknown): value is ServiceError {
  if (value instanceof ServiceError) return true;
  const { code, exitCode } = (value ?? {}) as { code?: unknown; exitCode?: unknown };
  return value instanceof Error && typeof code === "string" && Object.hasOwn(ERROR_CODES, code) && typeof exitCode === "number";
}
