/**
 * Runs a fetch-style handler on `node:http`: buffers the body (refusing more than the limit before
 * building a `Request`), writes the `Response` back, and shuts down gracefully.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { ServiceError } from "./errors.ts";

export interface NodeListenOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
  shutdownTimeoutMs: number;
  tooLarge: (limit: number) => Response;
}

/** Reads the whole body, or null as soon as it grows past `limit` (the rest is drained, up to a bound). */
function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array<ArrayBuffer> | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (!over && size <= limit) return void chunks.push(chunk);
      if (!over) (over = true), (chunks.length = 0), resolve(null);
      // Keep reading (so the client sees our 413, not a reset) but stop at 16x the limit.
      if (size > limit * 16) req.destroy();
    });
    req.on("end", () => resolve(over ? null : new Uint8Array(Buffer.concat(chunks))));
    req.on("error", reject);
  });
}

async function send(res: ServerResponse, response: Response, closing: boolean): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  if (closing) headers.connection = "close";
  const body = response.body ? Buffer.from(await response.arrayBuffer()) : undefined;
  headers["content-length"] = String(body?.byteLength ?? 0);
  res.writeHead(response.status, headers);
  res.end(body);
}

export function listenNode(
  handler: (request: Request) => Promise<Response>,
  options: NodeListenOptions,
): Promise<{ url: string; host: string; port: number; close(): Promise<void> }> {
  let closing = false;
  const server = createServer(async (req, res) => {
    try {
      const method = req.method ?? "GET";
      const url = new URL(req.url ?? "/", "http://localhost");
      const headers = new Headers();
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
      let body: Uint8Array<ArrayBuffer> | null | undefined;
      if (method !== "GET" && method !== "HEAD") {
        if (Number(req.headers["content-length"] ?? 0) > options.maxBodyBytes) {
          return await send(res, options.tooLarge(options.maxBodyBytes), true).finally(() => req.resume());
        }
        body = await readBody(req, options.maxBodyBytes);
        if (body === null) return await send(res, options.tooLarge(options.maxBodyBytes), true);
      }
      const response = await handler(new Request(url, { method, headers, body }));
      await send(res, response, closing);
    } catch {
      // The handler answers every failure itself; this is for a broken connection or a bad URL.
      if (!res.headersSent) res.writeHead(400, { "content-type": "application/json; charset=utf-8", connection: "close" });
      res.end(JSON.stringify({ errors: [{ message: "Bad request", extensions: { code: "BAD_REQUEST" } }] }));
    }
  });

  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const reason = error.code === "EADDRINUSE" ? "address already in use" : error.message;
      reject(new ServiceError("INTERNAL", `Cannot listen on ${options.host}:${options.port}: ${reason}`, { cause: error }));
    });
    server.listen(options.port, options.host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : options.port;
      const host = options.host.includes(":") ? `[${options.host}]` : options.host;
      let closed: Promise<void> | undefined;
      resolve({
        url: `http://${host}:${port}`,
        host: options.host,
        port,
        close: () =>
          (closed ??= new Promise<void>((done) => {
            closing = true;
            const timer = setTimeout(() => server.closeAllConnections(), options.shutdownTimeoutMs);
            server.close(() => (clearTimeout(timer), done()));
            server.closeIdleConnections();
          })),
      });
    });
  });
}
