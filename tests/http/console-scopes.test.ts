// The consent page's checks, run in Node: Unraid's scope grammar and the redirect_uri rules.
import { describe, expect, it } from "vitest";
import { checkRedirect, parseScopes, redirectTo } from "../../console/scopes.ts";

describe("parseScopes", () => {
  it("reads roles, single pairs and the compact resource+resource:action+action form, case-insensitively", () => {
    expect(parseScopes("role:viewer,docker:read_any docker+vms:read_any+update_any,Role:ADMIN")).toEqual({
      roles: ["ADMIN", "VIEWER"],
      permissions: [
        { resource: "DOCKER", actions: ["READ_ANY", "UPDATE_ANY"] },
        { resource: "VMS", actions: ["READ_ANY", "UPDATE_ANY"] },
      ],
      unknown: [],
    });
  });

  it("keeps every scope it cannot read, whole, instead of dropping it", () => {
    expect(parseScopes("docker:read_any,frobnicate:read_any,docker:fly,role:king,docker,docker:read_any:x,docker+vms:read_any+nope").unknown)
      .toEqual(["frobnicate:read_any", "docker:fly", "role:king", "docker", "docker:read_any:x", "docker+vms:read_any+nope"]);
  });
});

describe("checkRedirect", () => {
  it("accepts https anywhere and http only to this machine", () => {
    for (const uri of ["https://app.example/cb", "http://localhost:8080/cb", "http://127.0.0.1/cb", "http://127.9.8.7:1/cb?x=1", "http://[::1]:3000/cb"]) {
      expect([uri, "url" in checkRedirect(uri)]).toEqual([uri, true]);
    }
  });

  it("refuses other schemes, plain http elsewhere, credentials, fragments and relative or missing URIs", () => {
    for (
      const uri of [
        "javascript:alert(1)", "data:text/html,x", "http://example.com/cb", "http://127.0.0.1.evil.example/cb", "http://localhost.evil.example/cb",
        "https://user:pw@app.example/cb", "https://app.example/cb#x", "https://app.example/cb#", "/cb", "", null,
      ]
    ) {
      expect([uri, "problem" in checkRedirect(uri)]).toEqual([uri, true]);
    }
  });

  it("adds the answer to the redirect_uri's own query and echoes state exactly", () => {
    const target = checkRedirect("https://app.example/cb?keep=1") as { url: URL };
    const href = redirectTo(target.url, { api_key: "sapi_x" }, "a b&c=d/é?#");
    const url = new URL(href);
    expect(url.searchParams.get("keep")).toBe("1");
    expect(url.searchParams.get("api_key")).toBe("sapi_x");
    expect(url.searchParams.get("state")).toBe("a b&c=d/é?#");
    expect(new URL(redirectTo(target.url, { error: "access_denied" }, null)).searchParams.has("state")).toBe(false);
  });
});
