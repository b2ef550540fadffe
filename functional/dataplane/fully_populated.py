#!/usr/bin/python3
"""Research probe (docs/octavia-fully-populated.md): is the fully-populated LB create accepted
by this Octavia, what shape works, are tags/positions kept, which shapes fail?
Prints a transcript; every LB it makes is named dp-<random>-* and cascade-deleted."""
import copy
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ostack  # noqa: E402
import render_haproxy  # noqa: E402
import run as dprun  # noqa: E402

PFX = "dp-%s" % uuid.uuid4().hex[:8]
tok = ostack.token()
o = ostack.Client(tok, ostack.OCT)
n = ostack.Client(tok, ostack.NEU)
SUB = ostack.subnet_id(n)
made = []


def post_lb(label, body):
    t = time.monotonic()
    st, b = o.post("/v2/lbaas/loadbalancers", body)
    dt_post = time.monotonic() - t
    if st != 201:
        print("%-44s -> %s %s" % (label, st, json.dumps(b)[:400]))
        return None, None
    lb = b["loadbalancer"]
    made.append(lb["id"])
    dt = ostack.wait_active(o, lb["id"])
    print("%-44s -> 201 in %.2fs; ACTIVE %.2fs after the POST returned (%.2fs total)"
          % (label, dt_post, dt, time.monotonic() - t))
    return lb, b


def minimal(p):
    return {"loadbalancer": {
        "name": p + "-min", "vip_subnet_id": SUB,
        "listeners": [{"name": p + "-http", "protocol": "HTTP", "protocol_port": 80,
                       "default_pool": {"name": p + "-a"},
                       "l7policies": [{"action": "REDIRECT_TO_POOL", "redirect_pool": {"name": p + "-b"},
                                       "rules": [{"type": "HOST_NAME", "compare_type": "EQUAL_TO",
                                                  "value": "b.example.com"}]}]}],
        "pools": [
            {"name": p + "-a", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
             "members": [{"address": "10.0.0.11", "protocol_port": 8080}]},
            {"name": p + "-b", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
             "members": [{"address": "10.0.0.12", "protocol_port": 8080}]}]}}


def representative(p):
    T = lambda *x: [p] + list(x)  # noqa: E731
    def pool(name, base):
        return {"name": p + "-" + name, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
                "tags": T("pool:" + name),
                "healthmonitor": {"type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 2,
                                  "http_method": "GET", "url_path": "/healthz", "expected_codes": "200",
                                  "name": p + "-hm-" + name, "tags": T("hm:" + name)},
                "members": [{"name": "%s-%s-m%d" % (p, name, i), "address": "10.0.0.%d" % (base + i),
                             "protocol_port": 8080, "subnet_id": SUB, "weight": 1,
                             "tags": T("member:%s-%d" % (name, i))} for i in range(1, 4)]}
    def rule(t, c, v, tag):
        return {"type": t, "compare_type": c, "value": v, "tags": T("rule:" + tag)}
    return {"loadbalancer": {
        "name": p + "-rep", "vip_subnet_id": SUB, "tags": T("lb"), "description": "fully populated",
        "listeners": [{
            "name": p + "-http", "protocol": "HTTP", "protocol_port": 80, "tags": T("listener"),
            "default_pool": {"name": p + "-web"},
            "l7policies": [
                {"name": p + "-p3", "position": 3, "action": "REDIRECT_TO_POOL",
                 "redirect_pool": {"name": p + "-web"}, "tags": T("policy:3"),
                 "rules": [rule("HOST_NAME", "EQUAL_TO", "www.example.com", "3a"),
                           rule("PATH", "STARTS_WITH", "/static", "3b")]},
                {"name": p + "-p1", "position": 1, "action": "REDIRECT_TO_POOL",
                 "redirect_pool": {"name": p + "-api"}, "tags": T("policy:1"),
                 "rules": [rule("HOST_NAME", "REGEX", r"^[^.]+\.example\.com(:[0-9]+)?$", "1a"),
                           rule("PATH", "REGEX", "^/api(/.*)?$", "1b")]},
                {"name": p + "-p2", "position": 2, "action": "REDIRECT_TO_POOL",
                 "redirect_pool": {"name": p + "-api"}, "tags": T("policy:2"),
                 "rules": [rule("HOST_NAME", "EQUAL_TO", "api.example.com", "2a"),
                           rule("PATH", "EQUAL_TO", "/v1", "2b")]}]}],
        "pools": [pool("web", 20), pool("api", 30)]}}


def check_children(lb_id):
    st, b = o.get("/v2/lbaas/loadbalancers/%s" % lb_id)
    lb = b["loadbalancer"]
    print("  LB tags:", lb["tags"])
    untagged = []
    for li in lb["listeners"]:
        st, l = o.get("/v2/lbaas/listeners/" + li["id"]); l = l["listener"]
        print("  listener %s tags=%s default_pool_id=%s" % (l["name"], l["tags"], l["default_pool_id"]))
        untagged += [] if l["tags"] else ["listener " + l["name"]]
        st, pols = o.get("/v2/lbaas/l7policies?listener_id=" + l["id"])
        for pol in sorted(pols["l7policies"], key=lambda x: x["position"]):
            print("  policy pos=%s name=%s tags=%s redirect_pool_id=%s" % (
                pol["position"], pol["name"], pol["tags"], pol["redirect_pool_id"]))
            untagged += [] if pol["tags"] else ["policy " + str(pol["name"])]
            st, rules = o.get("/v2/lbaas/l7policies/%s/rules" % pol["id"])
            for r in rules["rules"]:
                print("    rule %s %s %r tags=%s" % (r["type"], r["compare_type"], r["value"], r["tags"]))
                untagged += [] if r["tags"] else ["rule " + r["value"]]
    for pl in lb["pools"]:
        st, p = o.get("/v2/lbaas/pools/" + pl["id"]); p = p["pool"]
        print("  pool %s id=%s tags=%s healthmonitor_id=%s" % (p["name"], p["id"], p["tags"], p.get("healthmonitor_id")))
        untagged += [] if p["tags"] else ["pool " + p["name"]]
        if p.get("healthmonitor_id"):
            st, h = o.get("/v2/lbaas/healthmonitors/" + p.get("healthmonitor_id"))
            print("    healthmonitor %s tags=%s" % (h["healthmonitor"]["name"], h["healthmonitor"]["tags"]))
            untagged += [] if h["healthmonitor"]["tags"] else ["hm"]
        st, ms = o.get("/v2/lbaas/pools/%s/members" % p["id"])
        for m in ms["members"]:
            print("    member %s %s:%s tags=%s" % (m["name"], m["address"], m["protocol_port"], m["tags"]))
            untagged += [] if m["tags"] else ["member " + m["address"]]
    print("  children without tags:", untagged or "none")
    return lb


try:
    print("== minimal fully-populated create")
    body = minimal(PFX)
    print(json.dumps(body, indent=1))
    lb, _ = post_lb("POST loadbalancer (minimal graph)", body)
    if lb:
        check_children(lb["id"])

    print("== representative fully-populated create")
    body = representative(PFX)
    print(json.dumps(body, indent=1))
    lb, resp = post_lb("POST loadbalancer (representative graph)", body)
    if lb:
        print("  201 body listeners/pools:", json.dumps({k: resp["loadbalancer"].get(k) for k in ("listeners", "pools")})[:600])
        full = check_children(lb["id"])
        print("== rendered by Octavia's templater (raw)")
        conf, dm = render_haproxy.load_lb(lb["id"])
        raw = render_haproxy.render_octavia(dm, conf)
        for line in raw.splitlines():
            if line.strip().startswith(("acl ", "use_backend", "default_backend", "frontend", "backend", "bind", "http-request")):
                print("  " + line.rstrip())
        echo = {"10.0.0.%d:8080" % (b + i): nm for nm, b in (("web", 20), ("api", 30)) for i in range(1, 4)}
        reqs = [{"host": "a.example.com", "path": "/api/x", "expect": "api"},
                {"host": "api.example.com", "path": "/v1", "expect": "api"},  # p1 needs /api -> p2
                {"host": "www.example.com", "path": "/static/x.css", "expect": "web"},
                {"host": "nothing.test", "path": "/", "expect": "web"}]  # default pool
        code, out = dprun.run(lb["id"], reqs, echo_spec=echo)
        print("  run.py on the graph LB: exit %d" % code,
              [(r["request"]["host"], r["request"]["path"], r["status"], r["backend"]) for r in out["results"]])
        # Positions when a policy is given without position
    print("== pitfalls")
    bad = []
    b = minimal(PFX + "x1"); del b["loadbalancer"]["pools"][1]["name"]
    bad.append(("pool without name", b))
    b = minimal(PFX + "x2"); b["loadbalancer"]["listeners"][0]["l7policies"][0]["redirect_pool"] = {"name": "nope"}
    bad.append(("redirect_pool name not in pools[]", b))
    b = minimal(PFX + "x3"); b["loadbalancer"]["listeners"][0]["l7policies"][0]["redirect_pool_id"] = \
        b["loadbalancer"]["listeners"][0]["l7policies"][0].pop("redirect_pool")["name"]
    bad.append(("redirect_pool_id: <pool name>", b))
    b = minimal(PFX + "x4"); b["loadbalancer"]["pools"][1]["name"] = PFX + "x4-a"
    b["loadbalancer"]["listeners"][0]["l7policies"][0]["redirect_pool"]["name"] = PFX + "x4-a"
    bad.append(("two pools with the same name", b))
    b = minimal(PFX + "x5"); b["loadbalancer"]["pools"][0]["listener_id"] = str(uuid.uuid4())
    bad.append(("pool with listener_id", b))
    b = minimal(PFX + "x6"); b["loadbalancer"]["pools"][0]["loadbalancer_id"] = str(uuid.uuid4())
    bad.append(("pool with loadbalancer_id", b))
    b = minimal(PFX + "x7"); b["loadbalancer"]["listeners"][0]["l7policies"][0]["rules"] = []
    bad.append(("policy with rules: []", b))
    b = minimal(PFX + "x8"); b["loadbalancer"]["listeners"][0]["l7policies"][0]["rules"][0]["value"] = "a b"
    bad.append(("rule value with a space", b))
    b = minimal(PFX + "x9"); b["loadbalancer"]["listeners"][0]["l7policies"][0]["rules"][0].update(
        {"compare_type": "REGEX", "value": "^(abc"})
    bad.append(("rule REGEX that does not compile", b))
    b = minimal(PFX + "xa"); b["loadbalancer"]["listeners"][0]["default_pool"] = {"name": PFX + "xa-a"}
    b["loadbalancer"]["pools"][0]["protocol"] = "TCP"
    bad.append(("HTTP listener, TCP default pool", b))
    b = minimal(PFX + "xb"); b["loadbalancer"]["listeners"][0]["l7policies"][0]["redirect_pool"] = \
        copy.deepcopy(b["loadbalancer"]["pools"].pop(1))
    bad.append(("redirect_pool given in full inline (no pools[] entry)", b))
    b = minimal(PFX + "xc"); b["loadbalancer"]["listeners"][0]["l7policies"][0]["position"] = 0
    bad.append(("policy position 0", b))
    b = minimal(PFX + "xd"); b["loadbalancer"]["pools"][0]["members"][0]["subnet_id"] = str(uuid.uuid4())
    bad.append(("member subnet_id that does not exist", b))
    for label, body in bad:
        lb, _ = post_lb(label, body)
        if lb:
            check_children(lb["id"])
            ostack.delete_lb(o, n, lb["id"])
            made.remove(lb["id"])

    print("== single-object create with inline children")
    lb, _ = post_lb("POST loadbalancer (plain, for inline tests)", {"loadbalancer": {
        "name": PFX + "-inline", "vip_subnet_id": SUB,
        "listeners": [{"name": PFX + "-il", "protocol": "HTTP", "protocol_port": 80}]}})
    st, b = o.get("/v2/lbaas/listeners?name=%s-il" % PFX)
    lis = b["listeners"][0]
    st, b = o.post("/v2/lbaas/pools", {"pool": {"name": PFX + "-ip", "loadbalancer_id": lb["id"],
                   "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
                   "members": [{"address": "10.0.0.41", "protocol_port": 8080}]}})
    print("%-44s -> %s %s" % ("POST /v2/lbaas/pools with inline members", st, json.dumps(b)[:300]))
    ostack.wait_active(o, lb["id"])
    st, b = o.post("/v2/lbaas/pools", {"pool": {"name": PFX + "-ip2", "loadbalancer_id": lb["id"],
                   "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
                   "healthmonitor": {"type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 2}}})
    print("%-44s -> %s %s" % ("POST /v2/lbaas/pools with inline healthmonitor", st, json.dumps(b)[:300]))
    ostack.wait_active(o, lb["id"])
    st, b = o.post("/v2/lbaas/l7policies", {"l7policy": {"listener_id": lis["id"], "action": "REJECT",
                   "rules": [{"type": "PATH", "compare_type": "STARTS_WITH", "value": "/x"}]}})
    print("%-44s -> %s %s" % ("POST /v2/lbaas/l7policies with inline rules", st, json.dumps(b)[:300]))
    ostack.wait_active(o, lb["id"])
    st, b = o.get("/v2/lbaas/pools?loadbalancer_id=" + lb["id"])
    print("  pools on the LB afterwards:", [(p["name"], p["provisioning_status"], len(p["members"])) for p in b["pools"]])
    st, b = o.get("/v2/lbaas/l7policies?listener_id=" + lis["id"])
    print("  policies on the listener afterwards:", [(p["action"], p["provisioning_status"], len(p["rules"])) for p in b["l7policies"]])
finally:
    for lb_id in made:
        ostack.delete_lb(o, n, lb_id)
    print("cleaned up %d LBs" % len(made))
