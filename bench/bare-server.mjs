// The floor for the service benchmark: node:http answering every request with a constant JSON body
// the size of a `{ me { id name } }` result. Runs in its own process, like the service, so the load
// generator never shares an event loop with either side. Prints its port, then serves until killed.
import { createServer } from "node:http";

const BODY = '{"data":{"me":{"id":"00000000-0000-4000-8000-000000000000","name":"bench"}}}';
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(BODY);
  });
});
server.listen(Number(process.argv[process.argv.indexOf("--port") + 1] ?? 0) || 0, "127.0.0.1", () => console.log(server.address().port));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
