import { describe, expect, it } from "vitest";
import { CallbackTargets, embeddedIpv4, specialUse } from "../../src/domain/callback-target.ts";

describe("which addresses a callback may reach", () => {
  const publicOnly = new CallbackTargets([]);

  it.each([
    ["127.0.0.1", "loopback"],
    ["127.0.0.7", "loopback"],
    ["10.0.0.5", "private network"],
    ["172.16.0.1", "private network"],
    ["172.31.255.255", "private network"],
    ["192.168.1.1", "private network"],
    ["100.64.0.1", "shared address space (carrier-grade NAT)"],
    ["169.254.169.254", "link-local"],
    ["0.0.0.0", "unspecified address"],
    ["0.1.2.3", "unspecified address"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.10", "documentation range"],
    ["198.51.100.7", "documentation range"],
    ["203.0.113.9", "documentation range"],
    ["198.18.0.1", "benchmarking range"],
    ["::", "unspecified address"],
    ["::1", "loopback"],
    ["fc00::1", "private network (unique local)"],
    ["fd12:3456::1", "private network (unique local)"],
    ["fe80::1", "link-local"],
    ["fec0::1", "private network (site-local)"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation range"],
    ["3fff::1", "documentation range"],
    ["2001::1", "reserved"],
    ["100::1", "reserved (discard-only)"],
    ["64:ff9b:1::a00:5", "reserved (local-use NAT64)"],
    ["::a00:5", "reserved"],
    ["::127.0.0.1", "reserved"],
    ["5f00::1", "reserved"],
    // IPv6 forms carrying an IPv4 address are judged by it.
    ["::ffff:127.0.0.7", "loopback"],
    ["::ffff:7f00:7", "loopback"],
    ["0:0:0:0:0:ffff:a00:5", "private network"],
    ["::ffff:0:a00:5", "private network"],
    ["64:ff9b::10.0.0.5", "private network"],
    ["64:ff9b::a9fe:a9fe", "link-local"],
    ["2002:a00:5::1", "private network"],
    ["2002:7f00:1::", "loopback"],
  ])("%s is refused: %s", (address, reason) => {
    expect(specialUse(address)).toBe(reason);
    expect(publicOnly.judge(address)).toEqual({ allowed: false, reason });
  });

  it.each([
    "93.184.215.14",
    "8.8.8.8",
    "172.32.0.1",
    "100.128.0.1",
    "2606:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
  ])("%s is public", (address) => {
    expect(specialUse(address)).toBeNull();
    expect(publicOnly.judge(address)).toEqual({ allowed: true });
  });

  it("reads the IPv4 address inside mapped, NAT64 and 6to4 addresses, and nothing else", () => {
    expect(embeddedIpv4("::ffff:10.1.2.3")).toBe("10.1.2.3");
    expect(embeddedIpv4("64:ff9b::c0a8:101")).toBe("192.168.1.1");
    expect(embeddedIpv4("2002:c0a8:101:1::5")).toBe("192.168.1.1");
    expect(embeddedIpv4("2606:4700::1111")).toBeNull();
    expect(embeddedIpv4("10.1.2.3")).toBeNull();
  });

  it("allowed networks let their addresses through, in any spelling, and nothing beside them", () => {
    const internal = new CallbackTargets(["10.1.2.0/24", "127.0.0.1", "fd00:aa::/32"]);
    expect(internal.judge("10.1.2.200")).toEqual({ allowed: true });
    expect(internal.judge("::ffff:10.1.2.200")).toEqual({ allowed: true });
    expect(internal.judge("127.0.0.1")).toEqual({ allowed: true });
    expect(internal.judge("fd00:aa::5")).toEqual({ allowed: true });
    expect(internal.judge("10.1.3.1")).toEqual({ allowed: false, reason: "private network" });
    expect(internal.judge("127.0.0.2")).toEqual({ allowed: false, reason: "loopback" });
    expect(internal.judge("fd00:ab::5")).toEqual({
      allowed: false,
      reason: "private network (unique local)",
    });
    // Allowed, but internal: what goes wrong there is told only in the operator's log.
    expect(internal.internal("10.1.2.200")).toBe(true);
    expect(internal.internal("8.8.8.8")).toBe(false);
  });

  it("a URL's host is judged without DNS when it is an address or localhost; another name waits for its addresses", () => {
    const host = (url: string) => new URL(url).hostname;
    expect(publicOnly.judgeHost(host("http://2130706439/"))).toEqual({ allowed: false, reason: "loopback" });
    expect(publicOnly.judgeHost(host("http://0x7f.1/"))).toEqual({ allowed: false, reason: "loopback" });
    expect(publicOnly.judgeHost(host("http://[::ffff:127.0.0.7]/"))).toEqual({
      allowed: false,
      reason: "loopback",
    });
    expect(publicOnly.judgeHost(host("http://LocalHost./x"))).toEqual({ allowed: false, reason: "loopback" });
    expect(publicOnly.judgeHost(host("http://dock.localhost:3000/"))).toEqual({
      allowed: false,
      reason: "loopback",
    });
    expect(publicOnly.judgeHost(host("https://hooks.example.com/"))).toBeNull();
    expect(publicOnly.judgeHost(host("https://8.8.8.8/"))).toEqual({ allowed: true });
    expect(new CallbackTargets(["127.0.0.0/8"]).judgeHost("localhost")).toEqual({ allowed: true });
    expect(new CallbackTargets(["::1/128"]).judgeHost("localhost")).toEqual({ allowed: true });
  });
});
