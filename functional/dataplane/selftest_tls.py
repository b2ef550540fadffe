#!/usr/bin/python3
"""TLS self-test of the data-plane harness (no Rust involved): a CA, an intermediate and two
leaf certificates (secure.example.com, *.wild.example.com) stored as opaque PKCS#12 Barbican
secrets; one load balancer created over Octavia's REST API in one fully-populated request with
an HTTP listener (REDIRECT_PREFIX 308 to https except the ACME challenge path, and host routes)
and a TERMINATED_HTTPS listener (default certificate + SNI list, host routes); then real HTTPS
(with SNI) and HTTP requests through haproxy rendered by Octavia, certificates written by the
amphora driver's own methods. Always deletes its load balancer and secrets.
Library use: tls_scenario(o, n, b, subnet_id, prefix) -> exit code (0 pass, 1 mismatch,
3 haproxy failure); SystemExit(2) on setup errors."""
import datetime
import json
import os
import shutil
import stat
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ostack  # noqa: E402
import run as dprun  # noqa: E402

SECURE, WILD = "secure.example.com", "*.wild.example.com"
ACME = "/.well-known/acme-challenge/"


def make_pki():
    """Root CA -> intermediate CA -> two leaves. Returns {"secure"|"wild": (p12 bytes,
    subject RFC 4514 string, SANs)}, and the intermediate's subject (the leaves' issuer).
    secure.example.com has an RSA key, *.wild.example.com a P-256 key.
    Each PKCS#12 holds key + leaf + the intermediate (not the root), no password, so the
    chain haproxy serves is leaf + intermediate (2)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID
    now = datetime.datetime.utcnow()

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "dp-selftest"),
                          x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def issue(cn, key, issuer, issuer_key, ca, sans=None):
        b = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(issuer)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None),
                            critical=True))
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(s) for s in sans]),
                                critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    def key(kind):  # RSA keygen costs ~0.25 s here, P-256 ~1 ms: RSA only where it matters
        if kind == "rsa":
            return rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return ec.generate_private_key(ec.SECP256R1())

    root_key, int_key = key("ec"), key("ec")
    root = issue("dp-selftest root CA", root_key, name("dp-selftest root CA"), root_key, True)
    inter = issue("dp-selftest intermediate CA", int_key, root.subject, root_key, True)
    out = {}
    # one RSA and one ECDSA leaf: both key types go through Octavia's PKCS#12 / PEM code
    for label, cn, kind in (("secure", SECURE, "rsa"), ("wild", WILD, "ec")):
        k = key(kind)
        leaf = issue(cn, k, inter.subject, int_key, False, [cn])
        p12 = pkcs12.serialize_key_and_certificates(label.encode(), k, leaf, [inter],
                                                    serialization.NoEncryption())
        out[label] = (p12, leaf.subject.rfc4514_string(), [cn])
    return out, inter.subject.rfc4514_string()


def rule(t, c, v, invert=False):
    return {"type": t, "compare_type": c, "value": v, "invert": invert}


def graph(pfx, sub, ref_secure, ref_wild):
    """The load balancer as one fully-populated create (one Octavia write instead of ~20).
    The harness reads the database, so children left PENDING_CREATE by Octavia 11.0.0's
    graph-create bugs (docs/octavia-fully-populated.md) render the same."""
    tags = [pfx]

    def to_pool(pos, pool, rules):
        return {"name": "%s-p%d" % (pfx, pos), "position": pos, "action": "REDIRECT_TO_POOL",
                "redirect_pool": {"name": pfx + "-" + pool}, "rules": rules, "tags": tags}
    host_secure = rule("HOST_NAME", "EQUAL_TO", SECURE)
    host_wild = rule("HOST_NAME", "ENDS_WITH", WILD[1:])
    http_policies = [
        {"name": pfx + "-redirect", "position": 1, "action": "REDIRECT_PREFIX",
         "redirect_prefix": "https://" + SECURE, "redirect_http_code": 308, "tags": tags,
         "rules": [host_secure, rule("PATH", "STARTS_WITH", ACME, invert=True)]},
        to_pool(2, "secure", [host_secure]),
        to_pool(3, "wild", [host_wild]),
        to_pool(4, "plain", [rule("HOST_NAME", "EQUAL_TO", "plain.example.com")]),
    ]
    https_policies = [to_pool(1, "secure", [host_secure]), to_pool(2, "wild", [host_wild])]
    pools = [{"name": "%s-%s" % (pfx, p), "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
              "tags": tags, "members": [{"address": addr, "protocol_port": 8080,
                                         "subnet_id": sub}]}
             for p, addr in (("secure", "10.0.0.21"), ("wild", "10.0.0.22"),
                             ("plain", "10.0.0.23"))]
    return {"loadbalancer": {
        "name": pfx + "-tls-lb", "vip_subnet_id": sub, "tags": tags, "pools": pools,
        "listeners": [
            {"name": pfx + "-http", "protocol": "HTTP", "protocol_port": 80, "tags": tags,
             "l7policies": http_policies},
            {"name": pfx + "-https", "protocol": "TERMINATED_HTTPS", "protocol_port": 443,
             "tags": tags, "default_tls_container_ref": ref_secure,
             "sni_container_refs": [ref_secure, ref_wild], "l7policies": https_policies}]}}


ECHO = {"10.0.0.21:8080": "svc-secure", "10.0.0.22:8080": "svc-wild",
        "10.0.0.23:8080": "svc-plain"}


def requests_for(pki):
    s_subj, w_subj = pki["secure"][1], pki["wild"][1]
    return [
        {"scheme": "https", "host": SECURE, "path": "/s", "expect": "svc-secure",
         "expect_subject": s_subj},
        {"scheme": "https", "host": "a.wild.example.com", "path": "/w", "expect": "svc-wild",
         "expect_subject": w_subj},
        # SNI picks the certificate, Host picks the route
        {"scheme": "https", "host": "a.wild.example.com", "sni": SECURE, "path": "/w",
         "expect": "svc-wild", "expect_subject": s_subj},
        # unknown SNI: the default certificate (first crt-list line); no route, no default pool
        {"scheme": "https", "host": "other.example.org", "path": "/", "expect": "503",
         "expect_subject": s_subj},
        {"host": SECURE, "path": "/p?q=1", "expect": "308",
         "expect_location": "https://secure.example.com/p?q=1"},
        {"host": SECURE, "path": ACME + "tok", "expect": "svc-secure"},
        {"host": "plain.example.com", "path": "/", "expect": "svc-plain"},
        {"host": "b.wild.example.com", "path": "/h", "expect": "svc-wild"},
    ]


def check_chain(out, pki, inter_subject):
    """Beyond run.py's expectations: every TLS answer carries the SAN of its subject, was
    issued by the intermediate and came with the intermediate (chain of 2)."""
    problems = []
    sans = {p[1]: p[2] for p in pki.values()}
    for r in out["results"]:
        tls = r.get("tls")
        if r["request"].get("scheme") != "https":
            continue
        if not tls:
            problems.append("%s: no TLS info (%s)" % (r["request"], r.get("error")))
            continue
        if tls["issuer"] != inter_subject or tls["chain_len"] != 2:
            problems.append("%s: issuer %s chain_len %s" % (r["request"]["host"],
                                                            tls["issuer"], tls["chain_len"]))
        if tls["san"] != sans.get(tls["subject"]):
            problems.append("%s: SAN %s" % (r["request"]["host"], tls["san"]))
    return problems


def check_cert_files(run_dir, lb_id, https_listener_id, pki):
    """The crt-list is <listener id>.pem, one local path a line: the default certificate first,
    then the SNI certificates (default included again). Octavia keeps no SNI order (the `sni`
    rows' position is NULL, the relationship has no order_by: they come in primary-key order,
    i.e. sorted by secret ref), so the SNI part is compared as a set. Every file mode 0600
    like the agent's; every PEM is certificate, key, intermediate (build_pem)."""
    from cryptography import x509
    problems = []
    d = os.path.join(run_dir, "certs", lb_id)
    with open(os.path.join(d, https_listener_id + ".pem")) as f:
        lines = f.read().split()
    subjects = []
    for line in lines:
        if not line.startswith(d + "/") or not os.path.exists(line):
            problems.append("crt-list entry %s not a local file" % line)
            continue
        with open(line, "rb") as f:
            pem = f.read()
        blocks = [b.split(b"-----")[0] for b in pem.split(b"-----BEGIN ")[1:]]
        if (len(blocks) != 3 or blocks[0] != blocks[2] != b"CERTIFICATE"
                or not blocks[1].endswith(b"PRIVATE KEY")):
            problems.append("%s holds %s, not certificate, key, intermediate" % (line, blocks))
        subjects.append(x509.load_pem_x509_certificate(pem).subject.rfc4514_string())
    want_default, want_sni = pki["secure"][1], {pki["secure"][1], pki["wild"][1]}
    if len(subjects) != 3 or subjects[0] != want_default or set(subjects[1:]) != want_sni:
        problems.append("crt-list is %s, want %s then %s" % (subjects, want_default,
                                                             sorted(want_sni)))
    for name in os.listdir(d):
        mode = stat.S_IMODE(os.stat(os.path.join(d, name)).st_mode)
        if mode != 0o600:
            problems.append("%s mode %o" % (name, mode))
    return problems


def print_results(out):
    for r in out["results"]:
        q, tls = r["request"], r.get("tls") or {}
        print("%-4s %-5s %-20s %-34s -> %s %-10s %s%s" % (
            "ok" if r.get("match") else "FAIL", q.get("scheme", "http"), q["host"], q["path"],
            r["status"], r["backend"] or r["location"],
            ("cert=%s chain=%s %s" % (tls.get("subject_cn"), tls.get("chain_len"),
                                      tls.get("version"))) if tls else "",
            (" error=" + r["error"]) if r.get("error") else ""))


def delete_tls_lb(o, n, b, lb_id, refs, barbican_wait=60):
    """Octavia's worker reads the listener certificates from Barbican to delete a TLS load
    balancer (flow_utils.get_listeners_on_lb -> load_certificates_data); if that fails the RPC
    is dropped and the LB stays PENDING_DELETE for good (seen when Barbican was restarted by
    another test on the shared stack). So wait until Barbican serves our secret first, and on
    failure keep the secrets (a later operator delete needs them) and say what is left."""
    t0 = time.monotonic()
    uuid = refs[0].rstrip("/").rsplit("/", 1)[1] if refs else None
    while uuid and b.get("/v1/secrets/" + uuid)[0] != 200:
        if time.monotonic() - t0 > barbican_wait:
            break  # try anyway; the error below names what is left
        time.sleep(1)
    try:
        ostack.delete_lb(o, n, lb_id)
    except Exception:
        print("CLEANUP FAILED: LB %s not deleted; secrets kept for it: %s" % (lb_id, refs))
        raise


def tls_scenario(o, n, b, sub, pfx):
    t = {}
    t0 = time.monotonic()
    pki, inter_subject = make_pki()
    t["pki"] = time.monotonic() - t0
    refs, lb_id, run_dir = [], None, None
    try:
        t1 = time.monotonic()
        for label in ("secure", "wild"):
            try:
                refs.append(ostack.create_opaque_secret(b, "%s-%s" % (pfx, label),
                                                        pki[label][0]))
            except (RuntimeError, OSError) as e:  # no Barbican in this stack, no creator role
                print("SETUP FAILED: Barbican %s: %s" % (ostack.BAR, e))
                raise SystemExit(2)
        t["secrets"] = time.monotonic() - t1
        t1 = time.monotonic()
        st, body = o.post("/v2/lbaas/loadbalancers", graph(pfx, sub, refs[0], refs[1]))
        if st != 201:
            print("SETUP FAILED: POST loadbalancer (TLS graph) -> %s %s"
                  % (st, json.dumps(body)[:800]))
            raise SystemExit(2)
        lb_id = body["loadbalancer"]["id"]
        print("%s: TLS LB %s" % (pfx, lb_id))
        ostack.wait_active(o, lb_id)
        t["lb_create"] = time.monotonic() - t1
        https_id = [li["id"] for li in body["loadbalancer"]["listeners"]
                    if li["protocol"] == "TERMINATED_HTTPS"][0]
        t1 = time.monotonic()
        code, out = dprun.run(lb_id, requests_for(pki), echo_spec=ECHO, keep=True)
        t["render_and_requests"] = time.monotonic() - t1
        run_dir = out.get("run_dir")
        if code == 3:
            print(json.dumps(out, indent=1)[:4000])
            return 3
        print("-- Octavia-rendered (bind / redirect / acl / use_backend), then the local bind:")
        with open(os.path.join(run_dir, "octavia-rendered.cfg")) as f:
            for line in f:
                if line.strip().startswith(("frontend", "bind ", "redirect ", "acl ",
                                            "use_backend ")):
                    print("   " + line.rstrip())
        with open(os.path.join(run_dir, "haproxy.cfg")) as f:
            print("\n".join("   local: " + ln.strip() for ln in f if ln.strip().startswith("bind ")))
        print_results(out)
        problems = check_chain(out, pki, inter_subject) + check_cert_files(run_dir, lb_id,
                                                                           https_id, pki)
        for p in problems:
            print("FAIL " + p)
        code = 1 if (code or problems) else 0
        print("tls selftest:", "PASS" if code == 0 else "FAIL")
        return code
    finally:
        t1 = time.monotonic()
        if run_dir:
            shutil.rmtree(run_dir, ignore_errors=True)
        if lb_id:
            delete_tls_lb(o, n, b, lb_id, refs)
            print("%s: TLS LB %s cascade-deleted" % (pfx, lb_id))
        for ref in refs:
            ostack.delete_secret(b, ref)
        if refs:
            print("%s: %d secrets deleted" % (pfx, len(refs)))
        t["cleanup"] = time.monotonic() - t1
        t["total"] = time.monotonic() - t0
        print("tls timing (s): " + " ".join("%s=%.1f" % kv for kv in t.items()))
