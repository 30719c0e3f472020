// Tests run the built CLI (dist/cli.cjs) as a child process, the way a user does; build it once first.
import { execFileSync } from "node:child_process";

export default function setup() {
  execFileSync("npm", ["run", "build", "--silent"], { stdio: "inherit" });
}
