/**
 * The routes for operators: `/healthz` (the process is up), `/readyz` (the store answers within a bounded
 * time) and `/metrics` (the Prometheus exposition, for allowed addresses or a key holding INFO:READ_ANY).
 */
import { can } from "../core/policy.ts";
import type { MaybePromise } from "../core/maybe-promise.ts";
import type { KeyStore, StoreTopology } from "../store/key-store.ts";
import type { VerifiedKey } from "../store/types.ts";
import type { KeyGate } from "./authenticate.ts";
import { credential } from "./request.ts";
import { errorResponse, JSON_TYPE } from "./responses.ts";
import type { MetricsEndpoint, ServiceRequest, ServiceResponse } from "./types.ts";

/** How long `/readyz` waits for the store before answering 503. */
export const READY_TIMEOUT_MS = 2_000;

const onlyGet = (request: ServiceRequest, path: string): ServiceResponse | null =>
  request.method === "GET" || request.method === "HEAD"
    ? null
    : errorResponse(405, "METHOD_NOT_ALLOWED", `Use GET on ${path}`, { allow: "GET, HEAD" });

/** `/healthz`: 200 `{"status":"ok"}` while the process answers at all. */
export const healthz = (request: ServiceRequest): ServiceResponse =>
  onlyGet(request, "/healthz") ?? {
    status: 200,
    headers: { "content-type": JSON_TYPE },
    body: request.method === "HEAD" ? null : JSON.stringify({ status: "ok" }),
  };

type Probe = { problem: string | null; topology?: StoreTopology };

/**
 * `/readyz`: 200 when a cheap store read (is there any key?) succeeds within READY_TIMEOUT_MS, else
 * 503; a Redis store adds what it runs on (`store`: mode, master, replicas, AOF, warnings). Concurrent
 * probes share one read, so a flood of probes is one read at a time.
 */
export function readiness(store: KeyStore, timeoutMs = READY_TIMEOUT_MS) {
  let pending: Promise<Probe> | undefined;
  const probe = () =>
    (pending ??= new Promise<Probe>((resolve) => {
      const timer = setTimeout(() => resolve({ problem: `the key store did not answer within ${timeoutMs} ms` }), timeoutMs);
      Promise.all([store.isEmpty(), store.topology?.()]).then(([, topology]) => resolve({ problem: null, topology }), () => resolve({ problem: "the key store cannot be reached" }))
        .finally(() => clearTimeout(timer));
    }).finally(() => (pending = undefined)));
  return async (request: ServiceRequest): Promise<ServiceResponse> => {
    const wrong = onlyGet(request, "/readyz");
    if (wrong) return wrong;
    const { problem, topology } = await probe();
    const headers = { "content-type": JSON_TYPE, "cache-control": "no-store" };
    const body = problem ? { status: "unavailable", reason: problem } : { status: "ok", ...(topology ? { store: topology } : {}) };
    return { status: problem ? 503 : 200, headers, body: request.method === "HEAD" ? null : JSON.stringify(body) };
  };
}

/** `::ffff:127.0.0.1` (an IPv4 client of a dual-stack socket) is 127.0.0.1. */
const plain = (address: string) => address.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");

const ipv4 = (address: string): number | null => {
  const parts = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (!parts) return null;
  const bytes = parts.slice(1).map(Number);
  return bytes.some((b) => b > 255) ? null : ((bytes[0] << 24) | (bytes[1] << 16) | (bytes[2] << 8) | bytes[3]) >>> 0;
};

/**
 * A predicate for an allow-list of exact addresses (IPv4 or IPv6) and IPv4 CIDR blocks; throws on an
 * entry that is neither, so a typo is found at start-up, not when a scrape is refused.
 */
export function addressMatcher(allow: readonly string[]): (address: string | undefined) => boolean {
  const exact = new Set<string>();
  const blocks: Array<{ base: number; mask: number }> = [];
  for (const entry of allow.map((a) => a.trim()).filter(Boolean)) {
    const [address, bits, extra] = entry.split("/");
    const v4 = ipv4(address);
    if (bits === undefined && (v4 !== null || /^[0-9a-f:]+$/i.test(address) && address.includes(":"))) {
      exact.add(plain(address));
      continue;
    }
    const n = Number(bits);
    if (v4 === null || extra !== undefined || !/^\d+$/.test(bits ?? "") || n > 32) {
      throw new TypeError(`Invalid --metrics-allow entry '${entry}': use an IP address or an IPv4 CIDR block like 10.0.0.0/8`);
    }
    const mask = n === 0 ? 0 : (~0 << (32 - n)) >>> 0;
    blocks.push({ base: (v4 & mask) >>> 0, mask });
  }
  return (address) => {
    if (!address) return false;
    const a = plain(address);
    if (exact.has(a)) return true;
    const v4 = ipv4(a);
    return v4 !== null && blocks.some(({ base, mask }) => ((v4 & mask) >>> 0) === base);
  };
}

/**
 * `/metrics`: the exposition for allowed addresses, else for a key holding INFO:READ_ANY, admitted by the
 * gate every route that takes a key goes through (its credits and rate limits spent like on /graphql, but
 * not by a 403): from another address 403 without a key or with a key lacking it, 401 with a key that is
 * not valid.
 */
export function metricsRoute(endpoint: MetricsEndpoint, gate: Pick<KeyGate, "admit">) {
  const allowed = addressMatcher(endpoint.allow);
  const exposition = async (request: ServiceRequest): Promise<ServiceResponse> => {
    const { contentType, body } = await endpoint.render();
    return { status: 200, headers: { "content-type": contentType, "cache-control": "no-store" }, body: request.method === "HEAD" ? null : body };
  };
  return (request: ServiceRequest): MaybePromise<ServiceResponse> => {
    const wrong = onlyGet(request, "/metrics");
    if (wrong) return wrong;
    if (allowed(request.remoteAddress)) return exposition(request);
    const found = credential(request.headers);
    if ("problem" in found) {
      return errorResponse(403, "FORBIDDEN", "/metrics is readable without a key only from the addresses in --metrics-allow; elsewhere send a key with INFO:READ_ANY");
    }
    // A key lacking INFO:READ_ANY is refused before its use is counted: a 403 spends no credit nor rate limit.
    const lacks = (key: VerifiedKey) =>
      can(key, "INFO", "READ_ANY") ? undefined : errorResponse(403, "FORBIDDEN", "Reading /metrics needs a key with INFO:READ_ANY");
    return gate.admit(request, found.secret, () => exposition(request), undefined, lacks);
  };
}
