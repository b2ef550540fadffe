#!/usr/bin/python3
"""TLS termination with Barbican on the local stack (functional/openstack.sh), by real API calls.

Checks what docs/tls-barbican-notes.md records: which roles a caller needs, what Octavia does with
the secrets' ACLs, rotation, deleting a referenced secret, Octavia's 400 texts, and an
ACME-friendly REDIRECT_PREFIX policy. Prints one line per check and a JSON summary; exits 1 if a
check's expectation failed. Run with Debian's python (python3-cryptography):

    /usr/bin/python3 functional/barbican_tls_check.py [--outage]   (stack up; ROOT=/tmp/ostack default)

--outage also stops and pauses barbican-api (openstack.sh stop-service/pause-service) on the way.

Everything it creates is named tlscheck-* and deleted at the end. Secret payloads are never printed.
"""
import base64
import datetime
import json
import os
import sys
import time
import urllib.error
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

KS = "http://127.0.0.1:5000/v3"
BB = "http://127.0.0.1:9311/v1"
OC = "http://127.0.0.1:9876/v2/lbaas"
NE = "http://127.0.0.1:9696/v2.0"
ROOT = os.environ.get("ROOT", "/tmp/ostack")
RESULTS = {}
FAILED = []


def call(method, url, tok=None, body=None, expect=None, timeout=60):
    """(status, parsed body or text); never raises on HTTP errors; status "timeout" if no answer."""
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(url, data=data, method=method)
    r.add_header("Content-Type", "application/json")
    r.add_header("Accept", "application/json")
    if tok:
        r.add_header("X-Auth-Token", tok)
    try:
        with urllib.request.urlopen(r, timeout=timeout) as resp:
            status, txt = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, txt = e.code, e.read()
    except TimeoutError:
        return "timeout", None
    try:
        out = json.loads(txt) if txt else None
    except ValueError:
        out = txt.decode(errors="replace")
    if expect is not None and status != expect:
        raise SystemExit("%s %s -> %s (expected %s): %s" % (method, url, status, expect, out))
    return status, out


def login(user, project):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": user}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    r = urllib.request.Request(KS + "/auth/tokens", data=json.dumps(body).encode(), method="POST")
    r.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(r, timeout=30) as resp:
        tok = json.loads(resp.read())["token"]
        return resp.headers["X-Subject-Token"], tok["user"]["id"], tok["project"]["id"]


def check(name, ok, detail):
    RESULTS[name] = detail
    if not ok:
        FAILED.append(name)
    print("%-4s %s: %s" % ("ok" if ok else "FAIL", name, json.dumps(detail)[:600]), flush=True)


def make_p12(cn, password=None):
    """A self-signed cert+key for CN as PKCS#12 DER (no password unless given)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.utcnow()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
            .sign(key, hashes.SHA256()))
    enc = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    return pkcs12.serialize_key_and_certificates(cn.encode(), key, cert, None, enc)


def store_secret(tok, name, payload_bytes):
    return call("POST", BB + "/secrets", tok, {
        "name": name, "secret_type": "opaque", "payload": base64.b64encode(payload_bytes).decode(),
        "payload_content_type": "application/octet-stream", "payload_content_encoding": "base64"})


def secret(tok, name, cn):
    st, b = store_secret(tok, name, make_p12(cn))
    if st != 201:
        raise SystemExit("secret %s: %s %s" % (name, st, b))
    return b["secret_ref"]


def acl(tok, ref):
    return call("GET", ref + "/acl", tok)


def wait_lb(tok, lb_id, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        _, b = call("GET", "%s/loadbalancers/%s" % (OC, lb_id), tok)
        st = b["loadbalancer"]["provisioning_status"]
        if st in ("ACTIVE", "ERROR"):
            return st, round(time.time() - t0, 2)
        time.sleep(0.1)
    return "TIMEOUT", timeout


def create_lb(tok, name, subnet):
    _, b = call("POST", OC + "/loadbalancers", tok, {"loadbalancer": {"name": name, "vip_subnet_id": subnet}},
                expect=201)
    lb = b["loadbalancer"]["id"]
    st, _ = wait_lb(tok, lb)
    assert st == "ACTIVE", st
    return lb


def tls_listener(tok, lb, name, port, default_ref, sni_refs):
    body = {"listener": {"name": name, "loadbalancer_id": lb, "protocol": "TERMINATED_HTTPS",
                         "protocol_port": port, "default_tls_container_ref": default_ref}}
    if sni_refs is not None:
        body["listener"]["sni_container_refs"] = sni_refs
    return call("POST", OC + "/listeners", tok, body)


def main():
    admin, admin_uid, admin_pid = login("admin", "admin")
    demo, _, demo_pid = login("demo", "demo")
    demo2, _, _ = login("demo2", "demo")
    octavia, octavia_uid, _ = login("octavia", "service")
    with open(os.path.join(ROOT, "etc/octavia_user_id")) as f:
        check("octavia_user_id file", f.read().strip() == octavia_uid, {"octavia_user_id": octavia_uid})
    with open(os.path.join(ROOT, "etc/topology.json")) as f:
        topo = json.load(f)
    lbs = []
    refs = []  # (token, ref) to delete at the end
    try:
        run(admin, admin_uid, demo, demo_pid, demo2, octavia, octavia_uid, topo, lbs, refs)
    finally:
        cleanup(admin, lbs, refs)
    print(json.dumps({"failed": FAILED, "results": RESULTS}, indent=1))
    sys.exit(1 if FAILED else 0)


def cleanup(admin, lbs, refs):
    """LBs first, secrets once the LBs are gone: the worker reads every TLS listener's secrets
    during a cascade delete and wedges the LB in PENDING_DELETE if one is missing."""
    for tok, lb in lbs:
        call("DELETE", "%s/loadbalancers/%s?cascade=true" % (OC, lb), tok)
    for _, lb in lbs:
        for _ in range(300):
            if call("GET", "%s/loadbalancers/%s" % (OC, lb), admin)[0] == 404:
                break
            time.sleep(0.2)
        # the noop worker leaves the VIP port behind
        for p in call("GET", NE + "/ports?device_owner=Octavia&name=octavia-lb-" + lb, admin)[1]["ports"]:
            call("DELETE", "%s/ports/%s" % (NE, p["id"]), admin)
    for tok, ref in refs:
        call("DELETE", ref, tok)
    for n in call("GET", NE + "/networks?name=tlscheck-net", admin)[1]["networks"]:
        call("DELETE", "%s/networks/%s" % (NE, n["id"]), admin)


def run(admin, admin_uid, demo, demo_pid, demo2, octavia, octavia_uid, topo, lbs, refs):
    # --- the controller's user (kuryr.conf: admin in project admin)
    def sec(name, cn, tok=admin):
        ref = secret(tok, name, cn)
        refs.append((tok, ref))
        return ref
    s_default, s_a, s_b = sec("tlscheck-default", "default.example"), sec("tlscheck-a", "a.example"), \
        sec("tlscheck-b", "b.example")
    st, b = acl(admin, s_a)
    check("fresh secret ACL", st == 200, {"status": st, "acl": b})
    st, b = call("GET", s_a + "/payload", octavia)
    check("octavia user reads a foreign secret without ACL -> 403", st == 403, {"status": st, "body": b})

    lb = create_lb(admin, "tlscheck-lb", topo["private_subnet"])
    lbs.append((admin, lb))
    t0 = time.time()
    st, b = tls_listener(admin, lb, "tlscheck-https", 443, s_default, [s_a, s_b])
    api_s = round(time.time() - t0, 2)
    lst = b["listener"]["id"] if st == 201 else None
    lb_st, dt = wait_lb(admin, lb)
    check("TERMINATED_HTTPS listener, default + 2 SNI PKCS#12 secrets (admin)", st == 201 and lb_st == "ACTIVE",
          {"status": st, "api_s": api_s, "to_active_s": dt, "lb": lb_st,
           "listener_status": b["listener"]["provisioning_status"] if st == 201 else b})
    acls = {n: acl(admin, r)[1] for n, r in (("default", s_default), ("a", s_a), ("b", s_b))}
    check("Octavia added its user to each secret's read ACL",
          all(octavia_uid in a["read"].get("users", []) for a in acls.values()), acls)

    # --- rotation: point the listener at new secrets
    n_default, n_a, n_b = sec("tlscheck-default2", "default.example"), sec("tlscheck-a2", "a.example"), \
        sec("tlscheck-b2", "b.example")
    t0 = time.time()
    st, b = call("PUT", "%s/listeners/%s" % (OC, lst), admin, {"listener": {
        "default_tls_container_ref": n_default, "sni_container_refs": [n_a, n_b]}})
    api_s = round(time.time() - t0, 2)
    lb_st, dt = wait_lb(admin, lb)
    _, got = call("GET", "%s/listeners/%s" % (OC, lst), admin)
    got = got["listener"]
    check("rotation: PUT default_tls_container_ref + sni_container_refs", st == 200 and lb_st == "ACTIVE"
          and got["default_tls_container_ref"] == n_default and sorted(got["sni_container_refs"]) == sorted([n_a, n_b]),
          {"status": st, "api_s": api_s, "to_active_s": dt, "lb": lb_st})
    check("after rotation: old secrets' ACL (is octavia removed?)", True,
          {"old_default": acl(admin, s_default)[1], "new_default": acl(admin, n_default)[1]})

    # --- SNI only change, default kept
    st, b = call("PUT", "%s/listeners/%s" % (OC, lst), admin, {"listener": {"sni_container_refs": [n_a]}})
    lb_st, dt = wait_lb(admin, lb)
    check("PUT sni_container_refs only (drop one)", st == 200 and lb_st == "ACTIVE", {"status": st, "to_active_s": dt})

    # --- bad refs: the 400 texts
    r_default = n_default
    missing = BB + "/secrets/00000000-0000-0000-0000-000000000000"
    st, b = tls_listener(admin, lb, "tlscheck-bad1", 8443, missing, None)
    check("400: default_tls_container_ref to a missing secret", st == 400, {"status": st, "body": b})
    st, b = tls_listener(admin, lb, "tlscheck-bad2", 8443, "not-a-ref", None)
    check("400: default_tls_container_ref not a URL", st == 400, {"status": st, "body": b})
    st, b = tls_listener(admin, lb, "tlscheck-bad3", 8443, r_default, [missing])
    check("400: one SNI ref missing", st == 400, {"status": st, "body": b})
    st, b = store_secret(admin, "tlscheck-notp12", b"-----BEGIN CERTIFICATE-----\nnot pkcs12\n")
    refs.append((admin, b["secret_ref"]))
    st, b = tls_listener(admin, lb, "tlscheck-bad4", 8443, b["secret_ref"], None)
    check("400: secret payload is not PKCS#12", st == 400, {"status": st, "body": b})
    st, b = store_secret(admin, "tlscheck-p12pw", make_p12("pw.example", b"secret"))
    refs.append((admin, b["secret_ref"]))
    st, b = tls_listener(admin, lb, "tlscheck-bad5", 8443, b["secret_ref"], None)
    check("400: password-protected PKCS#12", st == 400, {"status": st, "body": b})
    lb_st, _ = wait_lb(admin, lb)
    check("LB still ACTIVE after the rejected creates", lb_st == "ACTIVE", {"lb": lb_st})

    # --- ACL pre-set by the caller (PUT /acl with the octavia user): needed? harmful?
    pre = sec("tlscheck-preacl", "pre.example")
    st, b = call("PUT", pre + "/acl", admin, {"read": {"users": [octavia_uid], "project-access": True}})
    check("caller PUTs the octavia user into the read ACL itself", st == 200, {"status": st, "body": b})
    st, b = tls_listener(admin, lb, "tlscheck-preacl", 8444, pre, None)
    lb_st, dt = wait_lb(admin, lb)
    check("listener on a secret with a pre-set ACL", st == 201 and lb_st == "ACTIVE",
          {"status": st, "to_active_s": dt, "acl_after": acl(admin, pre)[1]})

    # --- ACME-friendly redirect: HTTP listener, REDIRECT_PREFIX 308 + HOST_NAME + inverted PATH
    _, b = call("POST", OC + "/listeners", admin, {"listener": {"name": "tlscheck-http", "loadbalancer_id": lb,
                "protocol": "HTTP", "protocol_port": 80}}, expect=201)
    http = b["listener"]["id"]
    wait_lb(admin, lb)
    st, b = call("POST", OC + "/l7policies", admin, {"l7policy": {
        "listener_id": http, "name": "tlscheck-https-redirect", "action": "REDIRECT_PREFIX",
        "redirect_prefix": "https://host", "redirect_http_code": 308, "position": 1}})
    pol = b["l7policy"]["id"] if st == 201 else None
    check("REDIRECT_PREFIX policy, redirect_http_code 308", st == 201, {"status": st,
          "policy": {k: b["l7policy"][k] for k in ("action", "redirect_prefix", "redirect_http_code")}
          if st == 201 else b})
    wait_lb(admin, lb)
    st1, b1 = call("POST", "%s/l7policies/%s/rules" % (OC, pol), admin, {"rule": {
        "type": "HOST_NAME", "compare_type": "EQUAL_TO", "value": "host"}})
    wait_lb(admin, lb)
    st2, b2 = call("POST", "%s/l7policies/%s/rules" % (OC, pol), admin, {"rule": {
        "type": "PATH", "compare_type": "STARTS_WITH", "value": "/.well-known/acme-challenge/", "invert": True}})
    lb_st, dt = wait_lb(admin, lb)
    _, pb = call("GET", "%s/l7policies/%s" % (OC, pol), admin)
    check("HOST_NAME rule + inverted PATH STARTS_WITH rule -> ACTIVE",
          st1 == 201 and st2 == 201 and lb_st == "ACTIVE" and pb["l7policy"]["provisioning_status"] == "ACTIVE",
          {"rule1": st1, "rule2": st2, "invert": b2["rule"]["invert"] if st2 == 201 else b2, "lb": lb_st,
           "policy": pb["l7policy"]["provisioning_status"]})
    st, b = call("POST", OC + "/l7policies", admin, {"l7policy": {
        "listener_id": http, "name": "tlscheck-bad-code", "action": "REDIRECT_PREFIX",
        "redirect_prefix": "https://host", "redirect_http_code": 305}})
    check("400: redirect_http_code 305", st == 400, {"status": st, "body": b})
    st, b = call("POST", OC + "/l7policies", admin, {"l7policy": {
        "listener_id": http, "name": "tlscheck-bad-prefix", "action": "REDIRECT_PREFIX",
        "redirect_prefix": "host-without-scheme", "redirect_http_code": 308}})
    check("400: redirect_prefix without scheme", st == 400, {"status": st, "body": b})

    deleted_secret_checks(admin, topo, lbs, refs)
    wedge_scope_checks(admin, topo, lbs)
    if "--outage" in sys.argv:
        outage_checks(admin, topo, lbs, refs)
    demo_checks(demo, demo_pid, demo2, octavia_uid, lbs, refs)


def deleted_secret_checks(admin, topo, lbs, refs):
    """Barbican lets the owner delete a secret a listener still references (Octavia registers no
    consumer for a PKCS#12 secret). Own LB, as the worker wedges it."""
    lb = create_lb(admin, "tlscheck-lb-del", topo["private_subnet"])
    lbs.append((admin, lb))
    gone, kept = secret(admin, "tlscheck-del-default", "del.example"), secret(admin, "tlscheck-del-sni", "sni.example")
    refs.append((admin, kept))
    _, b = tls_listener(admin, lb, "tlscheck-del", 443, gone, [kept])
    lst = b["listener"]["id"]
    wait_lb(admin, lb)
    _, b = call("POST", OC + "/listeners", admin, {"listener": {"name": "tlscheck-del-http", "loadbalancer_id": lb,
                "protocol": "HTTP", "protocol_port": 80}}, expect=201)
    http = b["listener"]["id"]
    wait_lb(admin, lb)
    _, b = call("POST", OC + "/l7policies", admin, {"l7policy": {
        "listener_id": lst, "name": "tlscheck-del-reject", "action": "REJECT"}}, expect=201)
    pol = b["l7policy"]["id"]
    wait_lb(admin, lb)

    st, b = call("DELETE", gone, admin)
    check("DELETE a secret still referenced by a listener", st == 204, {"status": st, "body": b})
    st, b = call("GET", "%s/listeners/%s" % (OC, lst), admin)
    check("listener after its default secret was deleted", st == 200,
          {"status": st, "provisioning_status": b["listener"]["provisioning_status"],
           "operating_status": b["listener"]["operating_status"]})
    st, b = call("PUT", "%s/listeners/%s" % (OC, lst), admin, {"listener": {"name": "tlscheck-del-renamed"}})
    lb_st, dt = wait_lb(admin, lb, 20)
    check("PUT name of that listener", st == 200 and lb_st == "ACTIVE", {"status": st, "lb": lb_st, "to_active_s": dt})
    st, b = call("POST", OC + "/l7policies", admin, {"l7policy": {
        "listener_id": http, "name": "tlscheck-del-http-reject", "action": "REJECT"}})
    lb_st, dt = wait_lb(admin, lb, 20)
    check("POST an L7 policy on the LB's other (HTTP) listener", st == 201 and lb_st == "ACTIVE",
          {"status": st, "lb": lb_st, "to_active_s": dt})
    st, b = call("POST", "%s/l7policies/%s/rules" % (OC, pol), admin, {"rule": {
        "type": "PATH", "compare_type": "STARTS_WITH", "value": "/x"}})
    lb_st, dt = wait_lb(admin, lb, 20)
    check("POST an L7 rule on that listener's policy: the worker cannot load the cert, LB stays PENDING_UPDATE",
          st == 201 and lb_st == "TIMEOUT", {"status": st, "lb_after_20s": lb_st})
    fresh = secret(admin, "tlscheck-del-new", "del.example")
    refs.append((admin, fresh))
    st, b = call("PUT", "%s/listeners/%s" % (OC, lst), admin, {"listener": {"default_tls_container_ref": fresh}})
    check("PUT of a new default secret while wedged", st == 409, {"status": st, "body": b})
    # test stack only: unwedge the LB in Octavia's database to go on (and so the clean-up can delete it)
    unwedge(lb)
    check("unwedged in the DB (test only)", wait_lb(admin, lb, 5)[0] == "ACTIVE", {})
    st, b = call("PUT", "%s/listeners/%s" % (OC, lst), admin, {"listener": {"default_tls_container_ref": fresh}})
    lb_st, dt = wait_lb(admin, lb, 20)
    check("repair before the next policy write: PUT a new default secret", st == 200 and lb_st == "ACTIVE",
          {"status": st, "lb": lb_st, "to_active_s": dt})
    st, b = call("POST", OC + "/l7policies", admin, {"l7policy": {
        "listener_id": lst, "name": "tlscheck-del-reject2", "action": "REJECT"}})
    lb_st, dt = wait_lb(admin, lb, 20)
    check("after the repair an L7 policy write on that listener works", st == 201 and lb_st == "ACTIVE",
          {"status": st, "lb": lb_st, "to_active_s": dt})

    # the cascade delete of an LB converts every listener (certs included): a gone secret wedges it
    lb2 = create_lb(admin, "tlscheck-lb-del2", topo["private_subnet"])
    lbs.append((admin, lb2))
    gone = secret(admin, "tlscheck-del2", "del2.example")
    _, b = tls_listener(admin, lb2, "tlscheck-del2", 443, gone, None)
    lst2 = b["listener"]["id"]
    wait_lb(admin, lb2)
    call("DELETE", gone, admin, expect=204)
    st, _ = call("DELETE", "%s/loadbalancers/%s?cascade=true" % (OC, lb2), admin)
    lb_st, _ = wait_lb(admin, lb2, 20)
    _, b = call("GET", "%s/loadbalancers/%s" % (OC, lb2), admin)
    check("cascade DELETE of an LB whose TLS listener's secret is gone: stays PENDING_DELETE", st == 204
          and b["loadbalancer"]["provisioning_status"] == "PENDING_DELETE",
          {"status": st, "lb_after_20s": b["loadbalancer"]["provisioning_status"]})
    unwedge(lb2)
    st, _ = call("DELETE", "%s/listeners/%s" % (OC, lst2), admin)
    lb_st, dt = wait_lb(admin, lb2, 20)
    check("DELETE of that listener works (no cert load); then the LB can go", st == 204 and lb_st == "ACTIVE",
          {"status": st, "lb": lb_st, "to_active_s": dt})


def wedge_scope_checks(admin, topo, lbs):
    """Which writes on an LB wedge when one TLS listener's secret is gone: the worker converts the
    whole LB (every listener, certificates included) for pool, member and listener writes too."""
    lb = create_lb(admin, "tlscheck-scope", topo["private_subnet"])
    lbs.append((admin, lb))
    gone = secret(admin, "tlscheck-scope", "scope.example")
    _, b = tls_listener(admin, lb, "tlscheck-scope", 443, gone, None)
    tls = b["listener"]["id"]
    wait_lb(admin, lb)
    _, b = call("POST", OC + "/pools", admin, {"pool": {"name": "tlscheck-scope", "loadbalancer_id": lb,
                "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}}, expect=201)
    pool = b["pool"]["id"]
    wait_lb(admin, lb)
    call("DELETE", gone, admin, expect=204)
    for name, method, url, body, wedges in (
            ("member create (pool on no TLS listener)", "POST", "%s/pools/%s/members" % (OC, pool),
             {"member": {"address": "10.0.0.50", "protocol_port": 80}}, True),
            ("pool create", "POST", OC + "/pools", {"pool": {"name": "tlscheck-scope2", "loadbalancer_id": lb,
             "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}}, True),
            ("HTTP listener create", "POST", OC + "/listeners", {"listener": {"name": "tlscheck-scope-http",
             "loadbalancer_id": lb, "protocol": "HTTP", "protocol_port": 80}}, True),
            ("LB PUT name", "PUT", "%s/loadbalancers/%s" % (OC, lb), {"loadbalancer": {"name": "tlscheck-scope2"}},
             False)):
        st, _ = call(method, url, admin, body)
        lb_st, _ = wait_lb(admin, lb, 15)
        check("secret gone, %s -> %s" % (name, "LB wedged" if wedges else "LB ACTIVE"),
              st in (200, 201) and (lb_st == "TIMEOUT") == wedges, {"status": st, "lb_after_15s": lb_st})
        if lb_st != "ACTIVE":
            unwedge(lb)
    # a cascade delete would wedge too: the TLS listener goes first
    call("DELETE", "%s/listeners/%s" % (OC, tls), admin, expect=204)
    wait_lb(admin, lb)


def openstack_sh(*args):
    import subprocess
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openstack.sh")
    subprocess.run([script] + list(args), check=True, stdout=subprocess.DEVNULL)


def outage_checks(admin, topo, lbs, refs):
    """Barbican down (stop-service: connection refused) or hung (pause-service: SIGSTOP)."""
    lb = create_lb(admin, "tlscheck-lb-outage", topo["private_subnet"])
    lbs.append((admin, lb))
    ref = secret(admin, "tlscheck-outage", "outage.example")
    refs.append((admin, ref))
    _, b = tls_listener(admin, lb, "tlscheck-outage", 443, ref, None)
    lst = b["listener"]["id"]
    wait_lb(admin, lb)
    _, b = call("POST", OC + "/l7policies", admin, {"l7policy": {
        "listener_id": lst, "name": "tlscheck-outage-reject", "action": "REJECT"}}, expect=201)
    wait_lb(admin, lb)
    openstack_sh("stop-service", "barbican-api")
    try:
        t0 = time.time()
        st, b = tls_listener(admin, lb, "tlscheck-outage2", 8443, ref, None)
        check("Barbican stopped: TLS listener create", st == 400,
              {"status": st, "body": b, "s": round(time.time() - t0, 2)})
        st, b = call("PUT", "%s/listeners/%s" % (OC, lst), admin, {"listener": {"name": "tlscheck-outage-renamed"}})
        lb_st, dt = wait_lb(admin, lb, 20)
        check("Barbican stopped: PUT name of a TLS listener", True, {"status": st, "lb": lb_st, "to_active_s": dt})
        st, b = call("POST", OC + "/l7policies", admin, {"l7policy": {
            "listener_id": lst, "name": "tlscheck-outage-reject2", "action": "REJECT"}})
        lb_st, dt = wait_lb(admin, lb, 20)
        check("Barbican stopped: L7 policy write on a TLS listener wedges the LB (PENDING_UPDATE)",
              st == 201 and lb_st == "TIMEOUT", {"status": st, "lb_after_20s": lb_st})
    finally:
        openstack_sh("start-service", "barbican-api")
    lb_st, _ = wait_lb(admin, lb, 5)
    check("Barbican back: the LB stays wedged (no retry)", lb_st == "TIMEOUT", {"lb": lb_st})
    unwedge(lb)
    openstack_sh("pause-service", "barbican-api")
    try:
        body = {"listener": {"name": "tlscheck-outage3", "loadbalancer_id": lb, "protocol": "TERMINATED_HTTPS",
                             "protocol_port": 8443, "default_tls_container_ref": ref}}
        st, b = call("POST", OC + "/listeners", admin, body, timeout=30)
        check("Barbican paused: TLS listener create gets no answer within 30 s", st == "timeout", {"status": st})
    finally:
        openstack_sh("resume-service", "barbican-api")
    t0 = time.time()
    while time.time() - t0 < 30:
        _, b = call("GET", "%s/listeners?loadbalancer_id=%s&name=tlscheck-outage3" % (OC, lb), admin)
        if b["listeners"]:
            break
        time.sleep(0.2)
    lb_st, dt = wait_lb(admin, lb, 30)
    check("Barbican resumed: the abandoned request completes, the listener exists",
          len(b["listeners"]) == 1 and lb_st == "ACTIVE",
          {"listeners": len(b["listeners"]), "after_resume_s": round(time.time() - t0, 2), "lb": lb_st})


def unwedge(lb_id):
    import pymysql
    db = pymysql.connect(host="127.0.0.1", user="ostack", password="ostack", database="octavia")
    with db.cursor() as c:
        c.execute("UPDATE load_balancer SET provisioning_status='ACTIVE' WHERE id=%s", (lb_id,))
        c.execute("UPDATE listener SET provisioning_status='ACTIVE' WHERE load_balancer_id=%s", (lb_id,))
        c.execute("UPDATE l7policy SET provisioning_status='ACTIVE' WHERE listener_id IN "
                  "(SELECT id FROM listener WHERE load_balancer_id=%s)", (lb_id,))
        c.execute("UPDATE l7rule SET provisioning_status='ACTIVE' WHERE l7policy_id IN (SELECT p.id FROM l7policy p "
                  "JOIN listener l ON p.listener_id = l.id WHERE l.load_balancer_id=%s)", (lb_id,))
        c.execute("UPDATE pool SET provisioning_status='ACTIVE' WHERE load_balancer_id=%s", (lb_id,))
        c.execute("UPDATE member SET provisioning_status='ACTIVE' WHERE pool_id IN "
                  "(SELECT id FROM pool WHERE load_balancer_id=%s)", (lb_id,))
    db.commit()
    db.close()


def demo_checks(demo, demo_pid, demo2, octavia_uid, lbs, refs):
    # --- least privilege: demo (member, load-balancer_member, creator) and demo2 (no creator)
    _, b = call("POST", NE + "/networks", demo, {"network": {"name": "tlscheck-net"}}, expect=201)
    net = b["network"]["id"]
    _, b = call("POST", NE + "/subnets", demo, {"subnet": {"name": "tlscheck-subnet", "network_id": net,
                "ip_version": 4, "cidr": "10.99.0.0/24"}}, expect=201)
    lb = create_lb(demo, "tlscheck-demo-lb", b["subnet"]["id"])
    lbs.append((demo, lb))
    st, b = store_secret(demo2, "tlscheck-demo2", make_p12("demo2.example"))
    check("demo2 (no creator) POST /v1/secrets -> 403", st == 403, {"status": st, "body": b})
    d = secret(demo, "tlscheck-demo", "demo.example")
    refs.append((demo, d))
    st, b = acl(demo2, d)
    check("demo2 GET the ACL of a project secret", True, {"status": st, "body": b})
    st, b = tls_listener(demo2, lb, "tlscheck-demo2", 443, d, None)
    check("demo2 TLS listener on demo's secret -> 400", st == 400, {"status": st, "body": b})
    st, b = call("PUT", d + "/acl", demo, {"read": {"users": [octavia_uid], "project-access": True}})
    check("demo (creator, owner) sets the read ACL itself", st == 200, {"status": st})
    st, b = tls_listener(demo2, lb, "tlscheck-demo2b", 443, d, None)
    check("demo2 TLS listener even with the ACL pre-set -> still 400", st == 400, {"status": st, "body": b})
    st, b = tls_listener(demo, lb, "tlscheck-demo", 443, d, None)
    lb_st, dt = wait_lb(demo, lb)
    check("demo (member + load-balancer_member + creator) TLS listener", st == 201 and lb_st == "ACTIVE",
          {"status": st, "to_active_s": dt})
    st, b = call("PUT", d + "/acl", demo2, {"read": {"users": [octavia_uid], "project-access": True}})
    check("demo2 PUT /acl on demo's secret", st == 403, {"status": st, "body": b})
    _ = demo_pid

    # application credential of demo WITH creator: Barbican accepts its token, but Octavia rescopes
    # the caller's token (keystoneauth Token plugin) and Keystone refuses to do that for it
    uid = login("demo", "demo")[1]
    st, b = call("POST", "%s/users/%s/application_credentials" % (KS, uid), demo, {"application_credential": {
        "name": "tlscheck-appcred", "roles": [{"name": r} for r in ("member", "load-balancer_member", "creator")]}})
    ac = b["application_credential"]
    try:
        body = {"auth": {"identity": {"methods": ["application_credential"],
                "application_credential": {"id": ac["id"], "secret": ac["secret"]}}}}
        r = urllib.request.Request(KS + "/auth/tokens", data=json.dumps(body).encode(), method="POST")
        r.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(r, timeout=30) as resp:
            actok = resp.headers["X-Subject-Token"]
        st, b = store_secret(actok, "tlscheck-appcred", make_p12("ac.example"))
        if st == 201:
            refs.append((demo, b["secret_ref"]))
        check("application credential (with creator) POST /v1/secrets", st == 201, {"status": st})
        st, b = tls_listener(actok, lb, "tlscheck-appcred", 444, d, None)
        check("application credential (with creator) TLS listener -> 400 (Keystone: 'Using a delegated token "
              "to create another token is not allowed')", st == 400, {"status": st, "body": b})
    finally:
        call("DELETE", "%s/users/%s/application_credentials/%s" % (KS, uid, ac["id"]), demo)


if __name__ == "__main__":
    main()
