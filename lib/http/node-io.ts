/**
 * The node:http adapter's socket work: the connection cap (which connection a new one replaces) and
 * reading a request body within its limit, with the progress the cap looks at.
 */
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import { ClientGone } from "../graphql/limits.ts";

/** A request body arriving slower than this (after the first second) does not keep its socket from being replaced. */
const MIN_BODY_BYTES_PER_SECOND = 16 * 1024;

/** Bodies being read: since when (ms) and how many bytes so far. */
export type Uploads = WeakMap<Socket, { since: number; bytes: number }>;

/** True while a body read is behind the minimum rate: the client, not the server, is holding the socket. */
function trickling(upload: { since: number; bytes: number } | undefined): boolean {
  if (!upload) return false;
  const elapsed = performance.now() - upload.since;
  return elapsed > 1_000 && upload.bytes < (MIN_BODY_BYTES_PER_SECOND * elapsed) / 1_000;
}

/**
 * Caps open connections. At the cap, a new connection evicts the oldest one with no request in flight
 * (silent, trickling its headers, or idle between requests) or whose request body trickles in below
 * MIN_BODY_BYTES_PER_SECOND, rather than being refused, so sockets held open by one client (even one
 * holding a key) cannot lock out everyone else; when every connection is busy the new one is closed.
 */
export function capConnections(server: Server, max: number, busy: WeakSet<Socket>, uploads: Uploads): void {
  const open = new Set<Socket>(); // insertion order: oldest first
  server.on("connection", (socket: Socket) => {
    if (open.size >= max) {
      let victim: Socket | undefined;
      for (const s of open) {
        if (!busy.has(s) || trickling(uploads.get(s))) (victim = s);
        if (victim) break; // the oldest idle one
      }
      if (!victim) return void socket.destroy();
      open.delete(victim);
      victim.destroy();
    }
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
}

/**
 * Reads the whole body as text, or null as soon as it grows past `limit` (the rest is drained, up to a bound).
 * Its progress goes to `uploads`, so a body sent at a trickle (by anyone holding a key, even GUEST) is as
 * replaceable at the cap as trickled headers, while a steady upload is not.
 */
export function readBody(req: IncomingMessage, limit: number, uploads: Uploads): string | null | Promise<string | null> {
  // The adapter runs the handler once the parser is done with the packet that ended the headers (see
  // listenNode): a small body is usually buffered whole by then. Take it at once instead of switching
  // the stream to flowing.
  if (req.complete && req.readableFlowing === null) return whole(req, limit);
  return streamBody(req, limit, uploads);
}

/** A body the parser has whole, without a stream in flowing mode. */
function whole(req: IncomingMessage, limit: number): string | null {
  const data = req.read() as Buffer | null;
  if (data === null) return "";
  return data.length > limit ? null : data.toString("utf8");
}

function streamBody(req: IncomingMessage, limit: number, uploads: Uploads): Promise<string | null> {
  const socket = req.socket;
  const upload = { since: performance.now(), bytes: 0 };
  uploads.set(socket, upload);
  return new Promise<string | null>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      upload.bytes = size;
      if (!over && size <= limit) return void chunks.push(chunk);
      if (!over) (over = true), (chunks.length = 0), resolve(null);
      // Keep reading (so the client sees our 413, not a reset) but stop at 16x the limit.
      if (size > limit * 16) req.destroy();
    });
    req.on("end", () => resolve(over ? null : Buffer.concat(chunks).toString("utf8")));
    // Aborted or cut off by the request timeout: the client's doing, not a failure worth a log line.
    const gone = () => reject(new ClientGone("The request body did not arrive"));
    req.on("error", gone);
    req.on("close", () => req.complete || gone());
  }).finally(() => uploads.delete(socket));
}

