#!/usr/bin/python3
"""Self-test of the data-plane harness: build an LB with L7 rules through the Octavia
REST API, route real requests through haproxy rendered by Octavia, assert backends.
Then the TLS scenario (selftest_tls.py: Barbican certificates, SNI, HTTP->HTTPS redirect).
Usage: selftest.py [--only http|tls]
Exit 0 on success, 1 on any mismatch, 2 on setup errors, 3 haproxy failure.
Always deletes what it created (LBs, their VIP ports, secrets)."""
import argparse
import json
import os
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ostack  # noqa: E402
import run as dprun  # noqa: E402
import selftest_tls  # noqa: E402

PFX = "dp-%s" % uuid.uuid4().hex[:8]
TAGS = [PFX]


def must(st, b, want, what):
    if st != want:
        print("SETUP FAILED: %s -> %s %s" % (what, st, json.dumps(b)[:500]))
        raise SystemExit(2)
    return b


def http_scenario(o, n, sub):
    st, b = o.post("/v2/lbaas/loadbalancers", {"loadbalancer": {
        "name": PFX + "-lb", "vip_subnet_id": sub, "tags": TAGS}})
    lb = must(st, b, 201, "POST loadbalancer")["loadbalancer"]
    print("%s: LB %s" % (PFX, lb["id"]))
    try:
        ostack.wait_active(o, lb["id"])

        def create(path, key, body):
            st, b = o.post(path, {key: body})
            r = must(st, b, 201, "POST " + path)[key]
            ostack.wait_active(o, lb["id"])
            return r

        lis = create("/v2/lbaas/listeners", "listener", {"name": PFX + "-http",
                     "loadbalancer_id": lb["id"], "protocol": "HTTP", "protocol_port": 80, "tags": TAGS})
        pa = create("/v2/lbaas/pools", "pool", {"name": PFX + "-a", "loadbalancer_id": lb["id"],
                    "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN", "tags": TAGS})
        pb = create("/v2/lbaas/pools", "pool", {"name": PFX + "-b", "loadbalancer_id": lb["id"],
                    "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN", "tags": TAGS})
        create("/v2/lbaas/pools/%s/members" % pa["id"], "member",
               {"name": PFX + "-ma", "address": "10.0.0.11", "protocol_port": 8080, "subnet_id": sub})
        create("/v2/lbaas/pools/%s/members" % pb["id"], "member",
               {"name": PFX + "-mb", "address": "10.0.0.12", "protocol_port": 8080, "subnet_id": sub})
        policies = [  # (position, pool, rules); no default pool -> unmatched = 503
            (1, pa, [("HOST_NAME", "EQUAL_TO", "www.example.com"), ("PATH", "REGEX", "^/foo(/.*)?$")]),
            (2, pb, [("HOST_NAME", "REGEX", r"^[^.]+\.example\.com(:[0-9]+)?$"), ("PATH", "STARTS_WITH", "/api")]),
            (3, pa, [("HOST_NAME", "EQUAL_TO", "exact.test"), ("PATH", "EQUAL_TO", "/exact")]),
            (4, pb, [("HOST_NAME", "EQUAL_TO", "www.example.com")]),
        ]
        for pos, pool, rules in policies:
            pol = create("/v2/lbaas/l7policies", "l7policy", {"name": "%s-p%d" % (PFX, pos),
                         "listener_id": lis["id"], "action": "REDIRECT_TO_POOL",
                         "redirect_pool_id": pool["id"], "position": pos, "tags": TAGS})
            for t, c, v in rules:
                create("/v2/lbaas/l7policies/%s/rules" % pol["id"], "rule",
                       {"type": t, "compare_type": c, "value": v, "tags": TAGS})
        A, B = "svc-a", "svc-b"
        requests = [
            {"host": "www.example.com", "path": "/foo", "expect": A},
            {"host": "www.example.com", "path": "/foo/bar", "expect": A},
            {"host": "WWW.EXAMPLE.COM", "path": "/foo", "expect": A},       # host EQUAL_TO is -i
            {"host": "www.example.com", "path": "/foo?x=1&y=/bar", "expect": A},  # query not in path
            {"host": "www.example.com", "path": "/foobar", "expect": B},    # not ^/foo(/.*)?$ -> p4
            {"host": "www.example.com", "path": "/FOO", "expect": B},       # PATH is case-sensitive
            {"host": "www.example.com:8080", "path": "/foo", "expect": "503"},  # EQUAL_TO sees ':8080'
            {"host": "api.example.com", "path": "/api/v1", "expect": B},
            {"host": "api.example.com:8080", "path": "/api/v1?q=2", "expect": B},  # regex allows :port
            {"host": "API.Example.COM", "path": "/api", "expect": B},       # host REGEX is -i too
            {"host": "api.example.com", "path": "/apis", "expect": B},      # STARTS_WITH is a raw prefix
            {"host": "a.b.example.com", "path": "/api", "expect": "503"},   # [^.]+ is one label
            {"host": "exact.test", "path": "/exact", "expect": A},
            {"host": "exact.test", "path": "/exact?z=1", "expect": A},
            {"host": "exact.test", "path": "/exact/", "expect": "503"},
            {"host": "other.org", "path": "/", "expect": "503"},
            {"host": None, "path": "/foo", "expect": "503"},                 # no Host header
        ]
        conf, dm = dprun.render_haproxy.load_lb(lb["id"])
        print("-- Octavia-rendered frontend rules:")
        for line in dprun.render_haproxy.render_octavia(dm, conf).splitlines():
            if line.strip().startswith(("acl ", "use_backend ", "default_backend ", "bind ")):
                print("   " + line.strip())
        code, out = dprun.run(lb["id"], requests,
                              echo_spec={"10.0.0.11:8080": A, "10.0.0.12:8080": B})
        for r in out["results"]:
            q = r["request"]
            print("%-4s %-24s %-18s -> %s %-6s pool=%-14s expect=%s" % (
                "ok" if r.get("match") else "FAIL", q["host"], q["path"], r["status"],
                r["backend"], r["pool_name"], q["expect"]))
        if code == 3:
            print(json.dumps(out, indent=1))
        print("http selftest:", "PASS" if code == 0 else "FAIL (run.py exit %d)" % code)
        return code
    finally:
        ostack.delete_lb(o, n, lb["id"])
        print("%s: LB %s cascade-deleted" % (PFX, lb["id"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("http", "tls"))
    a = ap.parse_args()
    tok = ostack.token()
    o = ostack.Client(tok, ostack.OCT)
    n = ostack.Client(tok, ostack.NEU)
    sub = ostack.subnet_id(n)
    codes = []
    for name in ("http", "tls"):
        if a.only not in (None, name):
            continue
        t0 = time.monotonic()
        if name == "http":
            codes.append(http_scenario(o, n, sub))
        else:
            codes.append(selftest_tls.tls_scenario(o, n, ostack.Client(tok, ostack.BAR), sub, PFX))
        print("%s scenario: %.1f s" % (name, time.monotonic() - t0))
    code = next((c for c in codes if c), 0)
    print("selftest:", "PASS" if code == 0 else "FAIL (exit %d)" % code)
    return code


if __name__ == "__main__":
    sys.exit(main())
