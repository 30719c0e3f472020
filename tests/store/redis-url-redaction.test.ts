// A Redis URL's credentials never appear in a message or log line, whatever they hold
// (@ / : % ? #, raw or percent-encoded, in the password or the username), at LOG_LEVEL=debug and trace,
// against an unreachable Redis and a reachable one that requires a password.
import Redis from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeStore, parseStoreSpec } from "../../lib/store/config.ts";
import { redactRedisUrl } from "../../lib/store/drivers/redis.ts";
import { runCli } from "../helpers/cli.ts";
import { freePort, type RedisServer, startRedis } from "../helpers/redis.ts";

// Every password ends in "3cr3t" and every named user holds "s3rnm": neither may ever be printed.
const PASSWORDS = ["p@ss3cr3t", "pa/ss3cr3t", "p%ss3cr3t", "p:ss3cr3t", "p?s#s3cr3t", "p%2Fs3cr3t", "p@/:%s3cr3t"];
const USERS = ["", "us3rnm", "u@s3rnm/x:y%"];
const LEAKS = /3cr3t|s3rnm|3cr%|s3rn%/i;

const urlFor = (port: number, user: string, password: string, encode: boolean) => {
  const e = encode ? encodeURIComponent : (s: string) => s;
  return `redis://${e(user)}:${e(password)}@127.0.0.1:${port}/0`;
};

describe("redactRedisUrl and describeStore", () => {
  it.each(PASSWORDS.flatMap((p) => USERS.flatMap((u) => [urlFor(6379, u, p, false), urlFor(6379, u, p, true)])))(
    "hide every piece of the credentials of %s",
    (url) => {
      expect(redactRedisUrl(url)).toBe("redis://***@127.0.0.1:6379/0");
      expect(describeStore({ kind: "redis", url })).toBe("redis://***@127.0.0.1:6379/0");
      // A password with a raw / ? # or % is refused as soon as the URL is read, in a message as redacted.
      let described: string;
      try {
        described = describeStore(parseStoreSpec(url));
      } catch (error) {
        expect(error).toMatchObject({ code: "USAGE" });
        described = (error as Error).message;
      }
      expect(described).toContain("redis://***@127.0.0.1:6379/0");
      expect(described).not.toMatch(LEAKS);
    },
  );

  it("hide a password given as a query parameter, and keep a URL without credentials as it is", () => {
    expect(redactRedisUrl("redis://db:6379/0?password=p@ss3cr3t&prefix=x")).toBe("redis://db:6379/0?password=***&prefix=x");
    expect(redactRedisUrl("redis://db:6379/0?prefix=x")).toBe("redis://db:6379/0?prefix=x");
  });
});

describe("the CLI with a Redis store URL holding credentials", () => {
  let redis: RedisServer;
  let unreachable: number;

  beforeAll(async () => {
    redis = await startRedis();
    unreachable = await freePort();
    const admin = new Redis(redis.url);
    for (const [i, password] of PASSWORDS.entries()) {
      for (const user of USERS.filter(Boolean)) {
        await admin.call("ACL", "SETUSER", `${user}${i}`, "on", `>${password}`, "~*", "&*", "+@all");
      }
    }
    await admin.quit();
  });
  afterAll(() => redis?.stop());

  /** Runs `apikey --list` on the URL at debug and trace; fails the test if any output leaks. */
  const listWith = async (url: string) => {
    const results = await Promise.all(
      ["debug", "trace"].map((level) => runCli(["apikey", "--list", "--store", url], { env: { LOG_LEVEL: level } })),
    );
    for (const result of results) {
      const output = result.stdout + result.stderr;
      expect(output, `output for ${url}`).not.toMatch(LEAKS);
      expect(output).not.toMatch(/\n\s+at /);
      // A host taken from a piece of a password (looked up in DNS, and named in the message) never happens.
      expect(output).not.toContain("ENOTFOUND");
    }
    return results[0];
  };

  it("never prints the credentials when Redis is unreachable", async () => {
    for (const password of PASSWORDS) {
      for (const user of USERS) {
        for (const encode of [false, true]) {
          const result = await listWith(urlFor(unreachable, user, password, encode));
          expect([2, 3]).toContain(result.code);
          expect(result.stderr).toMatch(/redis:\/\/\*\*\*@127\.0\.0\.1/);
        }
      }
    }
  }, 120_000);

  it("refuses a password with a raw / ? or # as a usage error instead of connecting to a host made of it", async () => {
    for (const url of ["redis://us3rnm:p@ss/3cr3t@127.0.0.1:6379/0", "redis://pa/ss3cr3t@127.0.0.1:6379/0", "redis://:ab?c3cr3t@127.0.0.1:6379/0"]) {
      const result = await listWith(url);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("percent-encoded");
    }
  });

  it("never prints them against a Redis that requires a password, right or wrong, raw or encoded", async () => {
    for (const [i, password] of PASSWORDS.entries()) {
      await redisConfigSetPassword(redis.port, i === 0 ? "" : PASSWORDS[i - 1], password);
      for (const user of USERS) {
        const name = user ? `${user}${i}` : "";
        const good = await listWith(urlFor(redis.port, name, password, true));
        expect(good.code, good.stderr).toBe(0);
        expect(good.stderr).toContain("store: redis://***@127.0.0.1");
        await listWith(urlFor(redis.port, name, password, false));
        const wrong = await listWith(urlFor(redis.port, name, `${password}x`, true));
        expect(wrong.code).toBe(3);
      }
    }
  }, 120_000);
});

/** Sets the default user's password (requirepass), authenticating with the previous one. */
async function redisConfigSetPassword(port: number, previous: string, password: string) {
  const client = new Redis({ port, host: "127.0.0.1", password: previous || undefined, lazyConnect: true });
  await client.connect();
  await client.config("SET", "requirepass", password);
  await client.quit();
}
