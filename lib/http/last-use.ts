/**
 * Last use in the service: which key authenticated each request goes to a `UseRecorder`
 * (`store/last-use.ts`): one map write on the request path; the writes (the first within 5 s, then at
 * most once a minute per key) happen on its timer. A failed write is logged once, not per request.
 */
import { createUseRecorder, type UseRecorder, type UseRecorderOptions } from "../store/last-use.ts";
import type { KeyStore } from "../store/key-store.ts";
import { createLastUseLog, type StoreStatusLog } from "./outage.ts";

/**
 * The recorder `HandlerOptions.recordLastUse` asks for, or undefined when it is off.
 * @example const recorder = startLastUse(store, true, log); recorder?.seen(key.id); await recorder?.close();
 */
export function startLastUse(
  store: Pick<KeyStore, "recordUse">,
  setting: boolean | UseRecorderOptions | undefined,
  log: StoreStatusLog,
): UseRecorder | undefined {
  if (setting === false) return undefined;
  const options = typeof setting === "object" ? setting : {};
  const status = createLastUseLog(log);
  const writer = {
    recordUse: async (uses: ReadonlyMap<string, number>) => {
      await store.recordUse(uses);
      status.worked();
    },
  };
  return createUseRecorder(writer, {
    ...options,
    onError: (error) => {
      status.failed(error);
      options.onError?.(error);
    },
  });
}
