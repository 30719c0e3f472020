/**
 * A Redis connection that gets out of step is a lost connection, never a crash.
 *
 * ioredis pairs each reply with the oldest command waiting for one. A reply nobody is waiting for (a
 * stray `$-1` from a proxy, a misbehaving server, garbage) makes its DataHandler either emit "Command
 * queue state error" or throw from inside the socket's "data" event (`null.toString()`), which is an
 * uncaught exception that ends the whole process. After such a reply nothing on that connection can be
 * trusted to answer the command it seems to answer, so the only safe move is the one a dropped
 * connection gets: destroy the socket; ioredis fails the commands in flight and reconnects.
 */
import type { Redis } from "ioredis";

/** The message a desync gives as the cause of the outage. */
export const DESYNC_REASON = "Redis sent a reply no command was waiting for (connection out of step)";

interface Stream {
  emit(event: string | symbol, ...args: unknown[]): boolean;
  destroy(error?: Error): void;
  destroyed?: boolean;
}

const guarded = new WeakSet<object>();

/**
 * Guards every connection `client` makes from now on. Call it before `connect()`.
 * `onDesync` is told when a connection was cut for being out of step. Returns a function for callers
 * that see a reply of the wrong shape (a desync ioredis cannot notice): it cuts the connection and
 * returns the error to throw.
 */
export function guardReplies(client: Redis, onDesync: (reason: string) => void): () => Error {
  const streamOf = () => (client as unknown as { stream?: Stream }).stream;
  const cut = (stream: Stream | undefined) => {
    if (!stream || stream.destroyed) return;
    onDesync(DESYNC_REASON);
    stream.destroy(new Error(DESYNC_REASON));
  };
  // "connect" comes on the tick after ioredis attached its reply parser, before the socket can read.
  client.on("connect", () => {
    const stream = streamOf();
    if (!stream || guarded.has(stream)) return;
    guarded.add(stream);
    const emit = stream.emit;
    // Own-instance override: only this socket's "data" event, every listener on it (the parser included).
    stream.emit = function (this: Stream, event: string | symbol, ...args: unknown[]): boolean {
      if (event !== "data") return emit.call(this, event, ...args);
      try {
        return emit.call(this, event, ...args);
      } catch {
        cut(stream);
        return true;
      }
    };
  });
  // A stray reply that does not throw is reported this way instead (see DataHandler.shiftCommand).
  client.on("error", (error: Error) => {
    if (error.message.startsWith("Command queue state error")) cut(streamOf());
  });
  return () => {
    cut(streamOf());
    return new Error(DESYNC_REASON);
  };
}

/** What a reply must look like; anything else means the connection is out of step. */
export type Shape = (value: unknown) => boolean;
export const okOrNil: Shape = (v) => v === "OK" || v === null;
export const textOrNil: Shape = (v) => typeof v === "string" || v === null;
export const isCount: Shape = (v) => typeof v === "number" && Number.isInteger(v) && v >= 0;
export const isFlag: Shape = (v) => v === 0 || v === 1;
/** A stored value: the store writes ids and JSON, never the status words Redis answers other commands with. */
export const storedOrNil: Shape = (v) => v === null || (typeof v === "string" && v !== "OK" && v !== "QUEUED");
const SHAPES: Record<string, Shape> = {
  get: storedOrNil,
  mget: (v) => Array.isArray(v) && v.every(storedOrNil),
  set: okOrNil,
  exists: isCount,
  unlink: isCount,
  scard: isCount,
  scan: (v) => Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && Array.isArray(v[1]),
};

/**
 * Checks the shape of every reply to the plain commands the store sends (unstorage's and ours): a reply
 * shifted onto the wrong command by a stray one (an id read back as "OK", a count as a value) cuts the
 * connection and fails the command instead of reading as "name taken" or "no such key".
 */
export function checkReplies(client: Redis, outOfStep: () => Error): void {
  const methods = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const [name, ok] of Object.entries(SHAPES)) {
    const send = methods[name].bind(client);
    methods[name] = async (...args: unknown[]) => {
      const reply = await send(...args);
      if (!ok(reply)) throw outOfStep();
      return reply;
    };
  }
}
