/**
 * Signing secrets at rest. A webhook's secret must sign every delivery, so unlike a key's secret it cannot
 * be kept as a hash: it is kept sealed with AES-256-GCM (Web Crypto) under the store's webhook key.
 *
 * That key is `SERVICE_API_WEBHOOK_KEY` when set (any text of at least 32 characters; its SHA-256 is the
 * AES key), so a copy of the store alone (a backup, a Redis dump) reveals no secret; every server and CLI
 * on the store must then have the same value. Unset, the store keeps a random key of its own beside the
 * records (`meta:webhook-key`: a 0600 file in the store's 0700 directory, or an entry in Redis), made on
 * first use: that protects against a leak of the records only, not of the whole store (docs/webhooks.md).
 * A sealed secret names its key by a short tag, so a secret sealed under another key is reported as such.
 */
import type { Storage } from "unstorage";
import { ServiceError } from "../../core/errors.ts";
import { sha256Hex } from "../../core/secret.ts";
import { fromBase64, toBase64 } from "../../core/webhook-signature.ts";
import type { AtomicIndex } from "../atomic.ts";

const KEY_ENTRY = "meta:webhook-key";
const WEBHOOK_KEY_VARIABLE = "SERVICE_API_WEBHOOK_KEY";

const hexBytes = (hex: string) => Uint8Array.from(hex.match(/../g)!, (h) => parseInt(h, 16));

export interface SecretBox {
  seal(secret: string): Promise<string>;
  open(sealed: string): Promise<string>;
}

/** The box over `storage`'s key, or the variable's. */
export function createSecretBox(storage: Storage, atomic: AtomicIndex, env: Record<string, string | undefined> = process.env): SecretBox {
  let loaded: Promise<{ key: CryptoKey; tag: string }> | undefined;
  const material = async (): Promise<string> => {
    const given = env[WEBHOOK_KEY_VARIABLE]?.trim();
    if (given) {
      if (given.length < 32) throw new ServiceError("USAGE", `${WEBHOOK_KEY_VARIABLE} is too short: give at least 32 random characters (openssl rand -base64 32)`);
      return given;
    }
    const fresh = toBase64(crypto.getRandomValues(new Uint8Array(32)));
    if (await atomic.claim(KEY_ENTRY, fresh)) return fresh;
    const kept = await storage.getItem(KEY_ENTRY);
    if (typeof kept !== "string" || !kept) throw new ServiceError("STORE_UNAVAILABLE", "The store's webhook key could not be read");
    return kept;
  };
  const load = () =>
    loaded ??= material().then(async (text) => {
      const digest = sha256Hex(`service-api webhook key\0${text}`);
      const key = await crypto.subtle.importKey("raw", hexBytes(digest), "AES-GCM", false, ["encrypt", "decrypt"]);
      return { key, tag: sha256Hex(digest).slice(0, 8) };
    }).catch((error) => {
      loaded = undefined;
      throw error;
    });
  return {
    async seal(secret) {
      const { key, tag } = await load();
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(secret)));
      return `v1:${tag}:${toBase64(iv)}:${toBase64(sealed)}`;
    },
    async open(sealed) {
      const { key, tag } = await load();
      const [version, sealedTag, iv, data] = sealed.split(":");
      if (version !== "v1" || sealedTag !== tag || !iv || !data) {
        throw new ServiceError("INVALID_INPUT", `A webhook's signing secret was sealed under another key than this one (${WEBHOOK_KEY_VARIABLE} differs?): rotate it with webhook --rotate-secret`);
      }
      const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64(iv) }, key, fromBase64(data));
      return new TextDecoder().decode(plain);
    },
  };
}
