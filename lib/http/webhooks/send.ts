/**
 * One attempt to deliver a webhook message: a signed POST (Standard Webhooks headers), at most 10 s in
 * all, following no redirect (a 3xx is a failure), reading at most 4 KiB of the answer. The address
 * connected to is checked after the DNS answer, in the socket's `lookup` (core/webhook-target.ts), so a
 * name cannot rebind past the check between a look-up and the connection.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { refuseAddress, type TargetRules } from "../../core/webhook-target.ts";
import { signWebhook } from "../../core/webhook-signature.ts";
import type { WebhookMessage } from "../../store/webhooks/events.ts";
import { VERSION } from "../../core/version.ts";

const ATTEMPT_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 4_096;

export interface SendResult {
  ok: boolean;
  status?: number;
  error?: string;
}

export interface SendOptions {
  /** The attempt's time (ms): its `webhook-timestamp`. */
  now?: number;
  /** The DNS look-up (default node:dns `lookup`); its answers are checked before any connection. */
  resolve?: typeof dnsLookup;
}

/** A `lookup` that refuses an address the endpoint may not reach. */
function checkedLookup(url: string, rules: TargetRules, resolve: typeof dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const list = addresses as LookupAddress[];
      const refused = list.map((a) => refuseAddress(url, a.address, rules)).find(Boolean);
      if (refused) return callback(Object.assign(new Error(refused), { code: "EADDRREFUSED" }), "", 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}

/** Posts `message` to `url`, signed with `secrets`; never throws. */
export async function sendWebhook(url: string, rules: TargetRules, secrets: readonly string[], message: WebhookMessage, options: SendOptions = {}): Promise<SendResult> {
  const { now = Date.now(), resolve: lookup = dnsLookup } = options;
  const target = new URL(url);
  const literal = target.hostname.replace(/^\[|\]$/g, "");
  if (isIP(literal)) {
    const refused = refuseAddress(url, literal, rules);
    if (refused) return { ok: false, error: refused };
  }
  const headers = {
    ...(await signWebhook(secrets, message.id, Math.floor(now / 1000), message.body)),
    "content-type": "application/json",
    "user-agent": `service-api/${VERSION} (webhooks)`,
    "content-length": String(Buffer.byteLength(message.body)),
  };
  return await new Promise<SendResult>((resolve) => {
    let settled = false;
    const done = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    const request = send(target, { method: "POST", headers, lookup: checkedLookup(url, rules, lookup), agent: false }, (response) => {
      const status = response.statusCode ?? 0;
      let read = 0;
      const finish = () => done(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, status, error: `answered ${status}` });
      response.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read >= MAX_ANSWER_BYTES) finish(); // enough: the status is what counts
      });
      response.on("end", finish);
      response.on("error", finish);
    });
    const timer = setTimeout(() => done({ ok: false, error: `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s` }), ATTEMPT_TIMEOUT_MS);
    request.on("error", (error) => done({ ok: false, error: error.message }));
    request.end(message.body);
  });
}
