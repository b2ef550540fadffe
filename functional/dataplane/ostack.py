"""Stdlib-only REST helper for the local Keystone / Neutron / Octavia / Barbican (dataplane tests)."""
import base64
import json
import os
import time
import urllib.error
import urllib.request

KS = os.environ.get("OS_AUTH_URL", "http://127.0.0.1:5000/v3")
OCT = os.environ.get("OCTAVIA_URL", "http://127.0.0.1:9876")
NEU = os.environ.get("NEUTRON_URL", "http://127.0.0.1:9696")
BAR = os.environ.get("BARBICAN_URL", "http://127.0.0.1:9311")


def call(method, url, body=None, tok=None, timeout=30):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(url, data=data, method=method)
    r.add_header("Content-Type", "application/json")
    r.add_header("Accept", "application/json")
    if tok:
        r.add_header("X-Auth-Token", tok)
    try:
        with urllib.request.urlopen(r, timeout=timeout) as resp:
            txt = resp.read()
            return resp.status, (json.loads(txt) if txt else None)
    except urllib.error.HTTPError as e:
        txt = e.read()
        try:
            return e.code, json.loads(txt)
        except ValueError:
            return e.code, txt.decode(errors="replace")


def token(user="admin", password="admin", project="admin"):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    data = json.dumps(body).encode()
    r = urllib.request.Request(KS + "/auth/tokens", data=data, method="POST",
                               headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=30) as resp:
        return resp.headers["X-Subject-Token"]


class Client:
    def __init__(self, tok, base):
        self.tok, self.base = tok, base

    def get(self, p):
        return call("GET", self.base + p, tok=self.tok)

    def post(self, p, b):
        return call("POST", self.base + p, b, tok=self.tok)

    def put(self, p, b):
        return call("PUT", self.base + p, b, tok=self.tok)

    def delete(self, p):
        return call("DELETE", self.base + p, tok=self.tok)


def wait_active(o, lb_id, timeout=120):
    """Poll the LB until provisioning_status ACTIVE; returns seconds waited."""
    t0 = time.monotonic()
    while True:
        st, b = o.get("/v2/lbaas/loadbalancers/" + lb_id)
        ps = b["loadbalancer"]["provisioning_status"] if st == 200 else None
        if ps == "ACTIVE":
            return time.monotonic() - t0
        if ps == "ERROR":
            raise RuntimeError("LB %s went to ERROR" % lb_id)
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("LB %s still %s %s" % (lb_id, st, ps))
        time.sleep(0.05)


def delete_lb(o, n, lb_id, timeout=60):
    """Cascade-delete one LB, wait until gone, then delete its VIP port if the
    API-side network driver allocated it (device_owner Octavia). Only this LB's port."""
    st, b = o.get("/v2/lbaas/loadbalancers/" + lb_id)
    if st != 200:
        return
    vip_port = b["loadbalancer"].get("vip_port_id")
    t0 = time.monotonic()
    while True:
        st, b = o.delete("/v2/lbaas/loadbalancers/%s?cascade=true" % lb_id)
        if st in (204, 404):
            break
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("cannot delete LB %s: %s %s" % (lb_id, st, b))
        time.sleep(0.2)  # 409 while PENDING_*
    while o.get("/v2/lbaas/loadbalancers/" + lb_id)[0] != 404:
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("LB %s not gone" % lb_id)
        time.sleep(0.1)
    if vip_port:
        st, p = n.get("/v2.0/ports/" + vip_port)
        if st == 200 and p["port"].get("device_owner") == "Octavia":
            n.delete("/v2.0/ports/" + vip_port)


def subnet_id(n, name="private-subnet"):
    st, b = n.get("/v2.0/subnets?name=" + name)
    if st != 200 or not b["subnets"]:
        raise SystemExit("subnet %s not found" % name)
    return b["subnets"][0]["id"]


def create_opaque_secret(b, name, payload):
    """Store bytes (e.g. a PKCS#12 bundle) as an opaque Barbican secret, the form Octavia
    reads as a TLS container: base64 payload, application/octet-stream. Returns its ref."""
    st, body = b.post("/v1/secrets", {
        "name": name, "secret_type": "opaque",
        "payload": base64.b64encode(payload).decode(),
        "payload_content_type": "application/octet-stream",
        "payload_content_encoding": "base64"})
    if st != 201:
        raise RuntimeError("POST /v1/secrets %s -> %s %s" % (name, st, str(body)[:300]))
    return body["secret_ref"]


def delete_secret(b, ref):
    """DELETE a secret by its ref (only the uuid is used, against b's base URL)."""
    st, body = b.delete("/v1/secrets/" + ref.rstrip("/").rsplit("/", 1)[1])
    if st not in (204, 404):
        raise RuntimeError("DELETE secret %s -> %s %s" % (ref, st, str(body)[:300]))
