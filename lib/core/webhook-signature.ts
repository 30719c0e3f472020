/**
 * Signing per the Standard Webhooks specification (standardwebhooks.com), so receivers verify with its
 * reference libraries (`standardwebhooks`, `svix`): the secret is `whsec_` + base64 of random bytes; the
 * signed content is `<webhook-id>.<webhook-timestamp>.<body>`; the signature is HMAC-SHA256 under the
 * secret's bytes, sent as `v1,<base64>` in `webhook-signature`, several separated by spaces (during a
 * secret's rotation both secrets sign). Web Crypto only.
 */

/** Bytes of a new signing secret (the specification asks for 24 to 64). */
const SECRET_BYTES = 32;
const WEBHOOK_SECRET_PREFIX = "whsec_";

/** Base64 of `bytes`, and back (Web Crypto takes and gives bytes; secrets and signatures travel as text). */
export const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
export const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** A new signing secret: `whsec_` and base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return WEBHOOK_SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

/** The headers of one attempt to deliver a message. */
export interface SignedHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/**
 * The Standard Webhooks headers for `body` under each of `secrets` (one `v1,` signature each).
 * `timestamp` is the attempt's time in seconds: a receiver refuses one too far from its clock.
 *
 * @example
 * const headers = await signWebhook(["whsec_…"], "msg_2f…", Math.floor(Date.now() / 1000), body);
 */
export async function signWebhook(secrets: readonly string[], id: string, timestamp: number, body: string): Promise<SignedHeaders> {
  const content = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  const signatures = await Promise.all(secrets.map(async (secret) => {
    const key = await crypto.subtle.importKey("raw", fromBase64(secret.slice(WEBHOOK_SECRET_PREFIX.length)), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return `v1,${toBase64(new Uint8Array(await crypto.subtle.sign("HMAC", key, content)))}`;
  }));
  return { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": signatures.join(" ") };
}
