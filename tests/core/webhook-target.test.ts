// Where a webhook may go: the URL as written, and the address a connection would actually reach.
import { describe, expect, it } from "vitest";
import { checkEndpointUrl, isPrivateAddress, refuseAddress } from "../../lib/core/webhook-target.ts";

describe("webhook targets", () => {
  it("accepts https anywhere public and http to loopback only", () => {
    expect(checkEndpointUrl("https://hooks.example.com/in")).toBe("https://hooks.example.com/in");
    expect(checkEndpointUrl("http://127.0.0.1:8080/x")).toBe("http://127.0.0.1:8080/x");
    expect(checkEndpointUrl("http://localhost/x")).toBe("http://localhost/x");
    expect(checkEndpointUrl("http://[::1]:9/x")).toBe("http://[::1]:9/x");
    expect(() => checkEndpointUrl("http://hooks.example.com/")).toThrow(/loopback/);
    expect(() => checkEndpointUrl("https://user:pw@hooks.example.com/")).toThrow(/user name or password/);
    expect(() => checkEndpointUrl("not a url")).toThrow(/Invalid webhook URL/);
  });

  it("refuses private address literals unless allowed", () => {
    for (const url of ["https://10.0.0.5/", "https://172.20.1.1/", "https://192.168.0.1/", "https://169.254.169.254/latest", "https://[fd00::1]/", "https://[::ffff:10.0.0.1]/", "https://[::ffff:c0a8:101]/"]) {
      expect(() => checkEndpointUrl(url), url).toThrow(/--allow-private/);
      expect(checkEndpointUrl(url, { allowPrivate: true })).toMatch(/^https:/);
    }
  });

  it("classifies addresses", () => {
    for (const a of ["10.1.2.3", "127.0.0.1", "100.64.0.1", "172.31.255.255", "192.168.1.1", "169.254.0.1", "0.0.0.0", "::1", "::", "fe80::1", "fc00::2", "::ffff:192.168.1.1"]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ["8.8.8.8", "172.32.0.1", "93.184.216.34", "2606:4700::1111"]) expect(isPrivateAddress(a), a).toBe(false);
    // Reserved, deprecated and IPv4-embedding IPv6 forms are no public receiver either.
    for (const a of ["::7f00:1", "::a00:1", "fec0::1", "100::1", "2001:db8::1", "64:ff9b::a00:1", "2002:a00:1::1", "not an address"]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    expect(() => checkEndpointUrl("https://[::7f00:1]/hook")).toThrow(/--allow-private/);
  });

  it("decides on the address connected to: a public name that resolves to a private or loopback address is refused", () => {
    expect(refuseAddress("https://hooks.example.com/", "10.0.0.7")).toMatch(/private address/);
    expect(refuseAddress("https://hooks.example.com/", "127.0.0.1")).toMatch(/private address/);
    expect(refuseAddress("https://hooks.example.com/", "10.0.0.7", { allowPrivate: true })).toBeUndefined();
    expect(refuseAddress("https://hooks.example.com/", "93.184.216.34")).toBeUndefined();
    expect(refuseAddress("http://localhost:8080/", "127.0.0.1")).toBeUndefined();
    expect(refuseAddress("http://localhost:8080/", "93.184.216.34")).toMatch(/loopback only/);
  });
});
