/**
 * Remembered answers to queries that depend on the caller's key alone (`me`, the role and permission
 * tables, `online`, introspection: see `dependsOnKeyOnly`). A hit skips the GraphQL route entirely, a
 * miss runs it. An answer is filed under the key's validity token (see `KeyStore.verify`) and everything
 * of the request that shapes the answer (method, URL, Accept, Content-Type, body), so it is reused
 * exactly while that verification stands: a new token (any revocation or update anywhere, or the
 * verification's expiry) files new answers, and the old ones age out of the LRU. Fields that read the
 * store (`apiKeys` and its `lastUsedAt`, `auditLog`) are never key-only, so their answers are never
 * remembered: a last use, which changes no verification and so no token, shows on the next request. An
 * expired key is refused before this cache is asked.
 */
import { createLru } from "../core/_lru.ts";
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import type { RememberedResponse, ServiceRequest, ServiceResponse } from "./types.ts";

/** At most this many answers, each to a request (URL + body) and of a body at most this long. */
export const ANSWER_CACHE_LIMITS = { entries: 1000, maxRequestLength: 2048, maxResponseLength: 8192 };

/** What computing an answer tells the cache: the response, and whether it depends on the key alone. */
export interface Computed {
  response: ServiceResponse;
  keyOnly: boolean;
}

/** The one thing the handler asks of the cache. */
export interface AnswerCache {
  /**
   * The answer remembered for this request under this validity token, or else `compute()`'s,
   * remembered (and returned as remembered) when it is a 200 that depends on the key alone and is small
   * enough. Without a promise when `compute` gave none.
   */
  answer(validity: string, request: ServiceRequest, body: string, compute: () => MaybePromise<Computed>): MaybePromise<ServiceResponse | RememberedResponse>;
}

/** @example const answers = createAnswerCache(); await answers.answer(key.validity, request, body, run); */
export function createAnswerCache(limits = ANSWER_CACHE_LIMITS): AnswerCache {
  const answers = createLru<string, RememberedResponse>(limits.entries);
  return {
    answer(validity, request, body, compute) {
      const small = request.url.length + body.length <= limits.maxRequestLength;
      const { headers } = request;
      const slot = small
        ? `${validity}\n${request.method} ${request.url}\n${headers.get("accept")}\n${headers.get("content-type")}\n${body}`
        : undefined;
      const hit = slot === undefined ? undefined : answers.get(slot);
      if (hit) return hit;
      return after(compute(), ({ response, keyOnly }) => {
        if (slot === undefined || !keyOnly || response.status !== 200 || (response.body?.length ?? 0) > limits.maxResponseLength) return response;
        const remembered: RememberedResponse = Object.freeze({ ...response, headers: Object.freeze({ ...response.headers }), remembered: true });
        answers.set(slot, remembered);
        return remembered;
      });
    },
  };
}
