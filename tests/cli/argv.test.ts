// lib/cli/argv.ts: argv -> the command and its typed flags, every refusal a USAGE error (exit 2).
import { describe, expect, it } from "vitest";
import { parseArgv } from "../../lib/cli/argv.ts";
import { loadCommands } from "../../lib/cli/registry.ts";
import { cliWithStore } from "../helpers/cli.ts";

const parse = async (...argv: string[]) => parseArgv(argv, await loadCommands());
const usage = async (...argv: string[]) => {
  const error = await parse(...argv).then(() => undefined, (e: { code?: string; message: string }) => e);
  expect(error?.code, argv.join(" ")).toBe("USAGE");
  return error!.message;
};

describe("parseArgv", () => {
  it("picks the command and hands it camelCase flags, values as typed", async () => {
    const { command, flags } = await parse("apikey", "--create", "--name", "007", "-r", "1e3", "--if-not-exists", "--expires-in=0x10", "--json");
    expect(command.usageName).toBe("apikey [...paths]");
    expect(flags).toMatchObject({ create: true, name: "007", roles: "1e3", ifNotExists: true, expiresIn: "0x10", json: true });
    expect((await parse("apikey", "--create", "-d=-5", "--name=  08 ")).flags).toMatchObject({ description: "-5", name: "  08 " });
  });

  it("takes a negative number after a value flag as its value, so the value's own check answers it", async () => {
    expect((await parse("apikey", "--create", "-d", "-5", "--name", "-7")).flags).toMatchObject({ description: "-5", name: "-7" });
    expect((await parse("apikey", "--list", "--limit", "-1")).flags).toMatchObject({ list: true, limit: "-1" });
    expect((await parse("apikey", "--list", "--limit", "-0.5")).flags).toMatchObject({ limit: "-0.5" });
    // A dash word that is not a number is still read as a flag; the message says how to give it as the value.
    expect(await usage("apikey", "--list", "--limit", "-x")).toBe(
      "--limit takes a value, and '-x' after it starts with a dash, so it was read as options (Unknown option `-x`). To give a value that starts with a dash, join it to the flag: --limit='-x'",
    );
  });

  it("takes a dash word with a space in it as the value, and names the flag and --flag=<value> for one without", async () => {
    expect((await parse("apikey", "--create", "-d", "- note", "--name", "x")).flags).toMatchObject({ description: "- note", name: "x" });
    expect(await usage("apikey", "--create", "--name", "x", "-d", "-note")).toBe(
      "-d takes a value, and '-note' after it starts with a dash, so it was read as options (Unknown option `-n`). To give a value that starts with a dash, join it to the flag: --description='-note'",
    );
    expect((await parse("apikey", "--create", "--description=-note")).flags).toMatchObject({ description: "-note" });
    // A flag of the command after a value flag is not taken as its value.
    expect(await usage("apikey", "--create", "--name", "--json")).toContain("`--name <name>` value is missing");
  });

  it("finds the command after global options, and a command's argument under its name", async () => {
    expect((await parse("--store", "007", "apikey", "--list")).flags).toMatchObject({ store: "007", list: true });
    expect((await parse("completion", "zsh")).flags).toEqual({ shell: "zsh" });
  });

  it("delivers a negation under the flag it negates, and numeric flags as cac reads them", async () => {
    expect((await parse("apikey", "--update", "--name", "x", "--no-expiry")).flags).toMatchObject({ expiry: false });
    expect((await parse("serve", "--port", "0x10", "--no-last-use")).flags).toMatchObject({ port: 16, lastUse: false });
  });

  it("refuses unknown, prototype-named and dotted flags, with the closest known flag when there is one", async () => {
    expect(await usage("apikey", "--crate")).toBe("Unknown option `--crate`. Did you mean '--create'? Run 'service-api --help'.");
    for (const flag of ["--constructor", "--__proto__=1", "--to-string", "--no-valueOf", "--name.x", "--a.__proto__"]) {
      expect(await usage("apikey", "--create", "--name", "x", flag)).toBe(`Unknown option \`${flag.split("=")[0]}\`. Run 'service-api --help'.`);
    }
  });

  it("refuses a value flag given twice or without its value, stray arguments, and missing or unknown commands", async () => {
    expect(await usage("apikey", "--create", "--name", "a", "--name=b")).toBe("--name was given more than once");
    expect(await usage("serve", "--port", "1", "--port", "2")).toBe("--port was given more than once");
    expect(await usage("apikey", "--create", "--name")).toContain("`--name <name>` value is missing");
    expect(await usage("serve", "extra")).toContain("Unused args: `extra`");
    expect(await usage("completion", "--store", "x")).toContain("missing required args");
    expect(await usage("--store", "x")).toBe("Missing command. Run 'service-api --help'.");
    expect(await usage("apikye")).toBe("Unknown command 'apikye'. Did you mean 'apikey'? Run 'service-api --help'.");
  });
});

describe("the CLI with a dotted flag", () => {
  it("exits 2 with one line and creates nothing", async () => {
    const env = cliWithStore();
    try {
      for (const extra of [["--name.x", "y"], ["--a.__proto__", "1"]]) {
        const result = await env.cli("apikey", "--create", "--name", "x", "--roles", "ADMIN", ...extra);
        expect([result.code, result.stderr]).toEqual([2, `Error: Unknown option \`${extra[0]}\`. Run 'service-api --help'.\n`]);
      }
      expect(JSON.parse((await env.cli("apikey", "--list", "--json")).stdout)).toEqual({ keys: [] });
    } finally {
      env.cleanup();
    }
  });
});
