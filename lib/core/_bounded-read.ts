/**
 * Reads a web stream as UTF-8 text, at most `limit` bytes: null as soon as more arrive, after cancelling
 * the stream, so an oversized body is never buffered whole. Shared by the service (request bodies) and the
 * client (a server's answers).
 */
export async function readStreamBounded(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string | null> {
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) (bytes.set(chunk, at), (at += chunk.byteLength));
  return new TextDecoder().decode(bytes);
}
